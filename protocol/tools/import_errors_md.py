#!/usr/bin/python3
# Migration helper for rebasing onto a main whose docs/errors.md still has hand-written rows:
# imports added or changed rows into protocol/evident.json (families by prefix; check them),
# then run protocol/generate.py. Usage: git show main:docs/errors.md > /tmp/m.md; import_errors_md.py /tmp/m.md
# Imports rows that other engineers added or changed in docs/errors.md (hand-written tables)
# into protocol/evident.json. Usage: import_errors.py <errors.md from main>
import json, re, sys
md = open(sys.argv[1]).read()
import os
p = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'evident.json')
d = json.load(open(p))
errs = d['errors']; secs = d['error_sections']
title_to_sec = {}
for k, v in secs.items():
    title_to_sec[v if isinstance(v, str) else v['title']] = k
ALIAS = {'Agent tasks (engine/agents, engine/task; details in docs/agents.md)': 'agent-tasks'}
sec = None; added = []; changed = []
FAM = {'task-': 'task', 'image-': 'task', 'agent-': 'task', 'report-': 'receipt', 'merge-': 'usage',
       'shard-': 'usage', 'fanout-': 'usage', 'python-': 'engine'}
for line in md.splitlines():
    m = re.match(r'^##+ (.*)$', line)
    if m:
        title = m.group(1).strip()
        if title in ALIAS:
            key = ALIAS[title]
            old = secs[key]
            secs[key] = title if isinstance(old, str) else dict(old, title=title)
            title_to_sec[title] = key
        if title not in title_to_sec:
            key = re.sub(r'[^a-z]+', '-', title.split('(')[0].lower()).strip('-')
            secs[key] = title
            title_to_sec[title] = key
            print('NEW SECTION', key, '=', title)
        sec = title_to_sec[title]
        continue
    m = re.match(r'\| `([a-z0-9-]+)`( \(retryable\))? \| ([^|]+) \| (.*) \| (.*) \|$', line.rstrip())
    if not m:
        continue
    code = m.group(1)
    module, cause, remedy = m.group(3).strip(), m.group(4).strip().replace("(retryable) ", ""), m.group(5).strip()
    if code not in errs:
        fam = next((f for pre, f in FAM.items() if code.startswith(pre)), None) or 'engine'
        errs[code] = {'family': fam, 'section': sec, 'module': module,
                      'retryable': bool(m.group(2)) or 'Retryable' in cause, 'cause': cause, 'remedy': remedy}
        added.append(code)
    else:
        e = errs[code]
        if (e['module'], e['cause'], e['remedy']) != (module, cause, remedy):
            e.update(module=module, cause=cause, remedy=remedy)
            changed.append(code)
order = list(secs)
d['errors'] = dict(sorted(errs.items(), key=lambda kv: (order.index(kv[1]['section']), kv[0])))
json.dump(d, open(p, 'w'), indent=2, ensure_ascii=False)
print('added', added); print('changed', changed)
