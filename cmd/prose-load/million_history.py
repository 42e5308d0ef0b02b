# A run that says 1,000,000 lines, and what its history keeps (BENCHMARKS.md,
# "The run's history"). Usage: PROSE=./prose python3 million_history.py MAX_HISTORY_EVENTS PORT
import json, os, shutil, subprocess, sys, tempfile, time, urllib.parse, urllib.request
PROSE = os.environ.get('PROSE', './prose')
maxev, port = sys.argv[1], sys.argv[2]
d = tempfile.mkdtemp(prefix='m.')
init = json.loads(subprocess.run([PROSE,'init','--json','--data',d+'/data'],capture_output=True,text=True).stdout)
srv = subprocess.Popen([PROSE,'serve','--data',d+'/data','--addr','127.0.0.1:'+port,'--log-level','warn','--max-history-events',maxev],stderr=subprocess.DEVNULL)
try:
    base='http://127.0.0.1:%s/api/v1/%s' % (port, init['workspace'])
    def call(method, path, body=None):
        req=urllib.request.Request(base+path, method=method, data=json.dumps(body).encode() if body is not None else None, headers={'Authorization':'Bearer '+init['api_key']})
        return json.load(urllib.request.urlopen(req))
    for i in range(100):
        try: urllib.request.urlopen('http://127.0.0.1:%s/v2/health'%port); break
        except Exception: time.sleep(0.1)
    code='process each row as follows\n  process each column as follows\n    say "a line of the run"\nthe output is "done"\n'
    a=call('POST','/automations',{'display_name':'million','english_code':code})['name'].split('/')[-1]
    l={'list':{'items':[{'number':{'lo':i}} for i in range(1000)]}}
    t0=time.time()
    r=call('POST','/automations/%s:invoke'%a,{'stage':'AUTOMATION_STAGE_DRAFT','inputs':{'rows':l,'columns':l}})['run_id']
    while True:
        st=[k for k in call('GET','/automations/%s/runs/%s'%(a,r))['state'] if k!='update_time'][0]
        if st in ('completed','failed','awaiting_guidance') or time.time()-t0>300: break
        time.sleep(0.2)
    t=time.time()-t0
    n=subprocess.run(['sqlite3',d+'/data/prose.db',"select count(*), sum(length(data)) from run_events where run_id='%s'"%r],capture_output=True,text=True).stdout.strip()
    ev=call('GET','/automations/%s/runs/%s/events?page_size=5&filter=%s'%(a,r,urllib.parse.quote('node_kind = "HistoryTruncated"')))
    print('max-history-events=%s: %s in %.1f s; run_events rows, data bytes: %s; truncation entries: %d' % (maxev, st, t, n, len(ev.get('run_events',[]))))
finally:
    srv.terminate(); srv.wait(); shutil.rmtree(d)
