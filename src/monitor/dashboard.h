/* The dashboard page `gpuslice monitor --listen` serves at "/": one static
 * page, no external assets, that polls /api/slices every two seconds. */
#ifndef GS_MONITOR_DASHBOARD_H
#define GS_MONITOR_DASHBOARD_H

static const char gs_dashboard_html[] =
    "<!doctype html><html><head><meta charset=\"utf-8\"><title>gpuslice</title>"
    "<style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
    "td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}"
    ".bar{background:#eee;width:160px;height:10px}.fill{background:#3a7;height:10px}"
    ".warn{color:#b30}.sim{color:#888}</style></head><body>"
    "<h1>gpuslice: slices on this node</h1><p id=\"root\"></p>"
    "<table><thead><tr><th>slice</th><th>pod / container</th><th>memory</th><th>in use / cap</th>"
    "<th>compute</th><th>refused</th><th>launches</th><th>alerts</th></tr></thead>"
    "<tbody id=\"rows\"></tbody></table>"
    "<script>"
    "function gib(b){return (b/1073741824).toFixed(2)+' GiB'}"
    "function esc(s){return "
    "String(s).replace(/[&<>\"]/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','\"':'&quot;'}[c]))}"
    "async function tick(){try{const r=await fetch('/api/slices');const d=await r.json();"
    "document.getElementById('root').textContent='state root: '+d.state_root;"
    "document.getElementById('rows').innerHTML=d.slices.map(s=>{"
    "const cap=s.memory_cap_bytes,pct=cap?Math.min(100,100*s.used_bytes/cap):0;"
    "const al=[];if(!s.cuda_seen)al.push('holds a slice, never used CUDA (CPU fallback?)');"
    "if(s.refused_by_cap>0)al.push('reached its memory cap');"
    "return '<tr><td>'+esc(s.id)+(s.simulated?' <span class=sim>[SIMULATED GPU]</span>':'')+'</td>'"
    "+'<td>'+(s.pod?esc(s.namespace+'/'+s.pod+'/'+s.container):'-')+'</td>'"
    "+'<td><div class=bar><div class=fill style=\"width:'+pct+'%\"></div></div></td>'"
    "+'<td>'+gib(s.used_bytes)+' / '+(cap?gib(cap):'none')+'</td>'"
    "+'<td>'+(s.compute_percent?s.compute_percent+'% "
    "'+s.compute_mode:'-')+(s.priority=='critical'?' (critical)':'')+'</td>'"
    "+'<td>'+s.refused_by_cap+'</td><td>'+s.launches+'</td>'"
    "+'<td class=warn>'+esc(al.join('; '))+'</td></tr>'}).join('')}catch(e){"
    "document.getElementById('root').textContent='cannot reach /api/slices: '+e}}"
    "tick();setInterval(tick,2000);"
    "</script></body></html>\n";

#endif
