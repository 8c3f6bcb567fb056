/**
 * The report page's script, inlined in the page. It reads the embedded JSON once, draws the chart as SVG and
 * builds a call's view, a search's results and a plan's changes only when asked, so a thread of hundreds of
 * calls stays quick. Every text from the log goes into the page through `textContent`, never as markup.
 */
/**
 * Case-insensitive matching that knows where a match is in the original text. Lower-casing a whole string may
 * change its length ("İ" lower-cases to two code units), so an offset found in the lower-cased text is not an
 * offset in the text: `fold` lower-cases one code point at a time and keeps, for each code unit it writes, the
 * offset of the code point it came from; `foldedMatch` maps a match back through it. Plain JavaScript, inlined in
 * the page and tested on its own (report-script.test.ts).
 */
export const FOLD_SEARCH = `
  function fold(text) {
    var out = "", from = [], i = 0;
    while (i < text.length) {
      var cp = text.codePointAt(i), ch = String.fromCodePoint(cp), low = ch.toLowerCase();
      for (var k = 0; k < low.length; k++) from.push(i);
      out += low;
      i += ch.length;
    }
    from.push(text.length);
    return { text: out, from: from };
  }
  // [start, end) of the first match of the folded query in text (both offsets in text), or [0, 0].
  function foldedMatch(text, foldedQuery) {
    var folded = fold(text), at = folded.text.indexOf(foldedQuery);
    if (at < 0 || foldedQuery.length === 0) return [0, 0];
    var last = folded.from[at + foldedQuery.length - 1];
    var end = last + String.fromCodePoint(text.codePointAt(last)).length;
    return [folded.from[at], end];
  }
`;

export const REPORT_SCRIPT = `
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var texts = data.texts, calls = data.calls, messages = data.messages, actions = data.actions;
  var SVG = "http://www.w3.org/2000/svg";
  var PREVIEW = 600;
  var selected = -1;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, String(attrs[k]));
    return e;
  }
  function badge(word) { return el("span", "badge " + word, word); }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  // Fates per message: the plan versions at which a message's fate changed, as pairs [plan index, action]
  // (-1 kept), so the page holds what changed rather than one array of every message per version.
  var planIndex = new Map();
  data.plans.forEach(function (plan, index) { planIndex.set(plan.version, index); });
  var timelines = [];
  data.plans.forEach(function (plan, index) {
    plan.changes.forEach(function (c) { (timelines[c[0]] || (timelines[c[0]] = [])).push(index, c[1]); });
  });
  // The action on message seq under plan version: the last change at or before that version's index.
  function fateAt(seq, version) {
    var target = planIndex.get(version), line = timelines[seq];
    if (target === undefined || line === undefined) return -1;
    var lo = 0, hi = line.length / 2;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (line[2 * mid] <= target) lo = mid + 1; else hi = mid; }
    return lo === 0 ? -1 : line[2 * lo - 1];
  }
  // A call's request messages, from its runs of indexes into the thread's distinct request messages.
  function requestOf(c) {
    var out = [];
    c.request.forEach(function (run) { for (var k = 0; k < run[1]; k++) out.push(data.requests[run[0] + k]); });
    return out;
  }
  function fateWord(action) { return action < 0 ? "kept" : actions[action][0]; }
  function why(action) {
    if (action < 0) return "";
    var a = actions[action];
    return a[1] + (a[2] ? ": " + a[2] : "");
  }
  function compacted(i) {
    return i === 0 ? calls[0].planVersion > 0 : calls[i].planVersion !== calls[i - 1].planVersion;
  }

  // A text block: the start of a long text, with a button that shows the rest.
  function textBlock(text) {
    var frag = document.createDocumentFragment();
    var pre = el("pre", "text", text.length > PREVIEW ? text.slice(0, PREVIEW) + " …" : text);
    frag.appendChild(pre);
    if (text.length > PREVIEW) {
      var more = el("button", "more", "show all " + text.length + " characters");
      more.type = "button";
      more.addEventListener("click", function () { pre.textContent = text; more.remove(); });
      frag.appendChild(more);
    }
    return frag;
  }

  function summary() {
    var verified = calls.filter(function (c) { return c.verified; }).length;
    var versions = data.plans.filter(function (p) { return p.version > 0; }).length;
    var s = document.getElementById("summary");
    s.textContent = plural(calls.length, "model call") + ", " + plural(messages.length, "log message") + ", " +
      plural(versions, "plan version") + "; replay verified " + verified + " of " + calls.length +
      " call(s). Generated " + data.generatedAt + ".";
    if (verified < calls.length) s.classList.add("bad");
  }

  function drawChart() {
    var box = document.getElementById("chart");
    var W = 1100, H = 300, L = 64, R = 16, T = 14, B = 34;
    var max = 1;
    calls.forEach(function (c) {
      max = Math.max(max, c.tokens, c.budget ? c.budget.available : 0);
    });
    max = Math.ceil(max * 1.08);
    var step = (W - L - R) / calls.length;
    function x(i) { return L + (i + 0.5) * step; }
    function y(v) { return T + (H - T - B) * (1 - v / max); }
    var root = svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "tokens sent per model call" });
    root.appendChild(svg("line", { class: "axis", x1: L, y1: y(0), x2: W - R, y2: y(0) }));
    for (var t = 0; t <= 4; t++) {
      var v = Math.round((max * t) / 4);
      root.appendChild(svg("line", { class: "axis", x1: L - 4, y1: y(v), x2: W - R, y2: y(v), opacity: t === 0 ? 1 : 0.4 }));
      var label = svg("text", { class: "tick-label", x: L - 8, y: y(v) + 4, "text-anchor": "end" });
      label.textContent = v.toLocaleString("en");
      root.appendChild(label);
    }
    var every = Math.max(1, Math.ceil(calls.length / 12));
    calls.forEach(function (c, i) {
      if (i % every !== 0 && i !== calls.length - 1) return;
      var label = svg("text", { class: "tick-label", x: x(i), y: H - B + 16, "text-anchor": "middle" });
      label.textContent = "#" + c.number;
      root.appendChild(label);
    });
    var axisName = svg("text", { class: "tick-label", x: L, y: H - 4 });
    axisName.textContent = "model call → (prompt tokens sent, by the renderer's count)";
    root.appendChild(axisName);
    calls.forEach(function (c, i) {
      if (!compacted(i)) return;
      var line = svg("line", { class: "compaction-mark", x1: x(i), y1: T, x2: x(i), y2: y(0) });
      var title = svg("title", {});
      title.textContent = "call #" + c.number + " committed plan v" + c.planVersion;
      line.appendChild(title);
      root.appendChild(line);
    });
    function path(cls, value) {
      var d = "";
      calls.forEach(function (c, i) {
        var v = value(c);
        if (v === undefined) return;
        d += (d === "" ? "M" : "L") + (x(i) - step / 2).toFixed(1) + " " + y(v).toFixed(1) + " H" + (x(i) + step / 2).toFixed(1) + " ";
      });
      if (d !== "") root.appendChild(svg("path", { class: cls, d: d }));
    }
    path("budget-line", function (c) { return c.budget ? c.budget.available : undefined; });
    path("target-line", function (c) { return c.budget ? c.budget.target : undefined; });
    var tokens = calls.map(function (c, i) { return x(i).toFixed(1) + "," + y(c.tokens).toFixed(1); }).join(" ");
    root.appendChild(svg("polyline", { class: "tokens-line", points: tokens }));
    var r = Math.max(2, Math.min(5, step / 3));
    calls.forEach(function (c, i) {
      var mark = svg("circle", { class: "call-mark" + (compacted(i) ? " compacted" : ""), cx: x(i), cy: y(c.tokens), r: r, "data-call": i });
      var title = svg("title", {});
      title.textContent = "call #" + c.number + ": " + c.tokens.toLocaleString("en") + " tokens" +
        (c.budget ? " of " + c.budget.available.toLocaleString("en") + " available" : "") + ", plan v" + c.planVersion;
      mark.appendChild(title);
      root.appendChild(mark);
    });
    root.addEventListener("click", function (event) {
      var rect = root.getBoundingClientRect();
      var vx = ((event.clientX - rect.left) / rect.width) * W;
      var i = Math.floor((vx - L) / step);
      if (i >= 0 && i < calls.length) select(i);
    });
    box.appendChild(root);
  }

  function fillSelect() {
    var sel = document.getElementById("call-select");
    calls.forEach(function (c, i) {
      var o = el("option", null, "#" + c.number + "  " + c.tokens + " tokens, plan v" + c.planVersion + (compacted(i) ? " (compacted)" : "") + "  " + c.callId);
      o.value = String(i);
      sel.appendChild(o);
    });
    sel.addEventListener("change", function () { select(Number(sel.value)); });
    document.getElementById("prev").addEventListener("click", function () { if (selected > 0) select(selected - 1); });
    document.getElementById("next").addEventListener("click", function () { if (selected < calls.length - 1) select(selected + 1); });
  }

  function seqRange(sources) {
    if (sources.length === 0) return "";
    var first = sources[0], last = sources[sources.length - 1];
    return first === last ? "log #" + first : "log #" + first + "–#" + last + " (" + sources.length + ")";
  }

  function requestItem(m, index) {
    var li = el("li", "request-message");
    var head = el("div", "head");
    head.appendChild(el("strong", null, index + 1));
    head.appendChild(el("span", null, m[0]));
    head.appendChild(badge(m[1]));
    head.appendChild(el("span", "muted", m[3] + " tokens"));
    var from = seqRange(m[4]);
    if (from) head.appendChild(el("span", "muted", from));
    li.appendChild(head);
    li.appendChild(textBlock(texts[m[2]]));
    return li;
  }

  function hiddenItem(seq, action) {
    var msg = messages[seq];
    var li = el("li", "hidden-message");
    li.dataset.seq = String(seq);
    var head = el("div", "head");
    head.appendChild(el("strong", null, "#" + seq));
    head.appendChild(el("span", null, msg[0]));
    head.appendChild(el("span", null, msg[1]));
    head.appendChild(badge(fateWord(action)));
    head.appendChild(el("span", "muted", msg[3] + " tokens"));
    li.appendChild(head);
    li.appendChild(el("div", "why", why(action)));
    li.appendChild(textBlock(texts[msg[2]]));
    return li;
  }

  function select(i) {
    selected = i;
    var c = calls[i];
    document.getElementById("call-select").value = String(i);
    document.querySelectorAll(".call-mark.selected").forEach(function (m) { m.classList.remove("selected"); });
    var mark = document.querySelector('.call-mark[data-call="' + i + '"]');
    if (mark) mark.classList.add("selected");
    var info = document.getElementById("call-info");
    info.textContent = "";
    var line = "call #" + c.number + " (" + c.callId + "), " + c.createdAt + ", " + c.format + (c.model ? " " + c.model : "") +
      "; plan v" + c.planVersion + " over " + c.logSeq + " log message(s); " + c.tokens + " prompt tokens" +
      (c.budget ? " of " + c.budget.available + " available (target " + c.budget.target + ", window " + c.budget.contextWindow + ")" : " (budget not recorded)") +
      "; recorded estimate with tools and framing " + c.tokenEstimate + ". ";
    info.appendChild(el("span", null, line));
    info.appendChild(el("span", c.verified ? "ok" : "bad", c.verified ? "Replay verified: same request hash." : "Replay does not match: " + (c.mismatch || "unknown reason")));
    var request = document.getElementById("request");
    request.textContent = "";
    var sent = requestOf(c);
    sent.forEach(function (m, index) { request.appendChild(requestItem(m, index)); });
    var hidden = document.getElementById("hidden");
    hidden.textContent = "";
    var counts = {};
    for (var seq = 0; seq < c.logSeq && seq < messages.length; seq++) {
      var action = fateAt(seq, c.planVersion);
      if (action < 0) continue;
      var word = fateWord(action);
      counts[word] = (counts[word] || 0) + 1;
      hidden.appendChild(hiddenItem(seq, action));
    }
    var words = Object.keys(counts).map(function (w) { return counts[w] + " " + w; });
    document.getElementById("hidden-count").textContent = words.length === 0 ? "none: every log message was sent as it is" : words.join(", ");
    document.getElementById("request-count").textContent = plural(sent.length, "message");
  }

  // Search: every log message holding the text, and its fate at each call, as runs of calls.
${FOLD_SEARCH}
  var lowered = null;
  function fateRuns(seq) {
    var runs = [];
    calls.forEach(function (c, i) {
      var key = seq >= c.logSeq ? "absent" : String(fateAt(seq, c.planVersion));
      var last = runs[runs.length - 1];
      if (last && last.key === key) last.to = i;
      else runs.push({ key: key, from: i, to: i });
    });
    return runs;
  }
  function callLink(i) {
    var a = el("a", null, "#" + calls[i].number);
    a.addEventListener("click", function () { select(i); document.getElementById("call-section").scrollIntoView(); });
    return a;
  }
  function search(query) {
    var out = document.getElementById("search-results");
    out.textContent = "";
    var q = fold(query.trim()).text;
    if (q.length < 2) return;
    if (lowered === null) lowered = messages.map(function (m) { return fold(texts[m[2]]).text; });
    var hits = [];
    lowered.forEach(function (t, seq) { if (t.indexOf(q) >= 0) hits.push(seq); });
    out.appendChild(el("p", "muted search-count", hits.length === 0 ? "no log message holds this text" : plural(hits.length, "log message") + (hits.length === 1 ? " holds" : " hold") + " this text" + (hits.length > 50 ? " (the first 50 shown)" : "")));
    hits.slice(0, 50).forEach(function (seq) {
      var msg = messages[seq], text = texts[msg[2]];
      var box = el("div", "result");
      box.dataset.seq = String(seq);
      var head = el("div", "head");
      head.appendChild(el("strong", null, "#" + seq + " " + msg[0] + " (" + msg[1] + ")"));
      box.appendChild(head);
      // Where the match is in the text itself: lower-casing may change a text's length ("İ" becomes two
      // code units), so offsets in the folded text are mapped back.
      var span = foldedMatch(text, q);
      var at = span[0], until = span[1];
      var start = Math.max(0, at - 80), end = Math.min(text.length, until + 80);
      var snippet = el("div", "snippet");
      snippet.appendChild(document.createTextNode((start > 0 ? "…" : "") + text.slice(start, at)));
      snippet.appendChild(el("mark", null, text.slice(at, until)));
      snippet.appendChild(document.createTextNode(text.slice(until, end) + (end < text.length ? "…" : "")));
      box.appendChild(snippet);
      var list = el("ul", "fate-runs");
      fateRuns(seq).forEach(function (run) {
        var li = el("li", "fate-run");
        li.appendChild(document.createTextNode(run.from === run.to ? "call " : "calls "));
        li.appendChild(callLink(run.from));
        if (run.to !== run.from) { li.appendChild(document.createTextNode("–")); li.appendChild(callLink(run.to)); }
        li.appendChild(document.createTextNode(": "));
        if (run.key === "absent") li.appendChild(badge("absent")).textContent = "not yet logged";
        else {
          var action = Number(run.key);
          li.appendChild(badge(fateWord(action)));
          if (action >= 0) li.appendChild(document.createTextNode(" " + why(action)));
        }
        list.appendChild(li);
      });
      box.appendChild(list);
      out.appendChild(box);
    });
  }

  function drawPlans() {
    var box = document.getElementById("plans");
    var firstCall = new Map();
    calls.forEach(function (c, i) { if (!firstCall.has(c.planVersion)) firstCall.set(c.planVersion, i); });
    data.plans.forEach(function (plan) {
      if (plan.version === 0) return;
      var groups = new Map();
      plan.changes.forEach(function (ch) {
        var list = groups.get(ch[1]) || [];
        list.push(ch[0]);
        groups.set(ch[1], list);
      });
      var d = el("details", "plan");
      var counts = {};
      plan.changes.forEach(function (ch) { var w = fateWord(ch[1]); counts[w] = (counts[w] || 0) + 1; });
      var byFate = Object.keys(counts).map(function (w) { return counts[w] + " " + (w === "kept" ? "back to kept" : w); });
      var s = el("summary", null, "v" + plan.version + ": " + plural(plan.changes.length, "message") + " changed (" + byFate.join(", ") + ")");
      d.appendChild(s);
      var ul = el("ul", "plan-changes");
      groups.forEach(function (seqs, action) {
        var li = el("li");
        li.appendChild(document.createTextNode(plural(seqs.length, "message") + " → "));
        li.appendChild(badge(fateWord(action)));
        li.appendChild(document.createTextNode(" " + (action < 0 ? "(back in the request)" : why(action))));
        var ids = el("div", "muted");
        d.addEventListener("toggle", function () {
          if (ids.textContent === "") ids.textContent = seqs.map(function (q) { return "#" + q + " " + messages[q][0]; }).join(", ");
        });
        li.appendChild(ids);
        ul.appendChild(li);
      });
      d.appendChild(ul);
      var used = firstCall.get(plan.version);
      var p = el("div", "muted");
      if (used === undefined) p.textContent = "no recorded call used this version";
      else { p.appendChild(document.createTextNode("first sent by call ")); p.appendChild(callLink(used)); }
      d.appendChild(p);
      box.appendChild(d);
    });
    if (box.childNodes.length === 0) box.appendChild(el("p", "muted", "no plan version was committed: nothing was compacted"));
  }

  summary();
  drawChart();
  fillSelect();
  drawPlans();
  var timer = 0;
  document.getElementById("search").addEventListener("input", function (e) {
    var value = e.target.value;
    clearTimeout(timer);
    timer = setTimeout(function () { search(value); }, 120);
  });
  var last = calls.length - 1;
  for (var i = calls.length - 1; i >= 0; i--) if (compacted(i)) { last = i; break; }
  select(last);
  document.body.dataset.ready = "true";
})();
`;
