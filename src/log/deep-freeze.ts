/**
 * Freezes a value and everything reachable from it, skipping subtrees that are already frozen (so freezing a new
 * plan that reuses earlier frozen actions only walks the new parts) and never calling into primitives.
 */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  Object.freeze(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (item !== null && typeof item === "object") deepFreeze(item);
    }
  } else {
    for (const key of Object.keys(value)) {
      const item = (value as Record<string, unknown>)[key];
      if (item !== null && typeof item === "object") deepFreeze(item);
    }
  }
  return value;
}
