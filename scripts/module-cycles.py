#!/usr/bin/env python3
"""Lists, per crate, the module import graph (use crate::/super:: paths) and any
pair of modules that import each other (`--graph` prints every edge).
Exit status 1 if a pair exists."""
import os, re, sys
# file-level "imports" graph per crate: file A uses crate::x::y -> module path x (file of x or x/mod.rs)
def modpath(root, f):
    rel=os.path.relpath(f,root)[:-3]
    parts=rel.split('/')
    if parts[-1] in('mod','lib','main'): parts=parts[:-1]
    return tuple(parts)
cycles=[]
for crate in sorted(os.listdir('crates')):
    root=f'crates/{crate}/src'
    files=[os.path.join(d,f) for d,_,fs in os.walk(root) for f in fs if f.endswith('.rs')]
    mods={modpath(root,f):f for f in files}
    edges={}
    for f in files:
        me=modpath(root,f)
        src=open(f).read()
        src=re.sub(r'#\[cfg\(test\)\]\s*mod tests\s*\{.*','',src,flags=re.S)
        src=re.sub(r'//.*','',src)  # comments and doc links are not imports
        tgt=set()
        # `crate::{a::b, c}` and `super::{..}`: each item is a path of its own.
        paths=[(m.group(1), '::'+m.group(2)) for m in re.finditer(r'\b(crate|super)((?:::\w+)+)',src)]
        for m in re.finditer(r'\b(crate|super)((?:::\w+)*)::\{([^}]*)\}',src):
            for item in m.group(3).split(','):
                item=item.strip().split(' as ')[0]
                if re.match(r'^\w+(::\w+)*$', item) and item!='self':
                    paths.append((m.group(1), '::'+(m.group(2)+'::'+item).lstrip(':')))
        for kind, rest in paths:
            m=type('M',(),{'group':lambda self,i,k=kind,r=rest: k if i==1 else r})()
            base=[] if m.group(1)=='crate' else list(me[:-1]) if not f.endswith(('mod.rs','lib.rs','main.rs')) else list(me[:-1])
            if m.group(1)=='super':
                base=list(me[:-1])
            segs=[x for x in m.group(2).split('::') if x]
            p=tuple(base)
            best=p if p in mods else None
            for s in segs:
                p=p+(s,)
                if p in mods: best=p
            if best and best!=me: tgt.add(best)
        # A parent's relative imports of its own children (`use form::X;`).
        for m in re.finditer(r'\buse\s+(?:self::)?(\w+)::', src):
            child=me+(m.group(1),)
            if child in mods:
                tgt.add(child)
        tgt.discard(me)
        edges[me]=tgt
    for a,ts in edges.items():
        for b in ts:
            if a in edges.get(b,()) and a<b:
                cycles.append((crate,'/'.join(a) or 'lib','/'.join(b) or 'lib'))
    n=sum(len(t) for t in edges.values())
    print(f"{crate}: {len(edges)} modules, {n} import edges")
    if '--graph' in sys.argv:
        for a in sorted(edges):
            if edges[a]:
                print(f"  {'/'.join(a) or 'lib'} -> {', '.join(sorted('/'.join(b) or 'lib' for b in edges[a]))}")
print("mutual imports:", cycles or "none")
sys.exit(1 if cycles else 0)
