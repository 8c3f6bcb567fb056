const n=100000; const ids=Array.from({length:n},(_, i)=>"msg-"+(i*7919).toString(36)+"-x");
const span=process.env.F?Object.freeze(ids.slice(1,99000)):ids.slice(1,99000);
function run(){ let end=1,j=0; while(j<span.length && end<n && ids[end]===span[j]){end++;j++;} return j;}
for(let r=0;r<10;r++){const t=performance.now(); const k=run(); console.log(k,(performance.now()-t).toFixed(3));}
const a=new Int32Array(n).fill(-1); const g=new Int32Array(2); const ranks=new Int8Array(2);
function apply(){for(let q=1;q<99000;q++){const c=a[q]; if(c<0||1>=ranks[c]){ if(c>=0)g[c]--; g[1]++; a[q]=1;}}}
for(let r=0;r<5;r++){a.fill(-1);const t=performance.now(); apply(); console.log('apply',(performance.now()-t).toFixed(3));}
