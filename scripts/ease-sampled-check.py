#!/usr/bin/env python3
"""EASE under sampled ranking (uni100), by hand: an independent check of recbench's
`eval_args.mode: uni100` on RecBole's ml-100k split (docs/recbole-general.md, "Sampled ranking").
EASE (reg 250) on the train split; per test user, its test items and 100 uniform draws per
item among the items the user has had in no split; top 10 by score (stable); Hit, NDCG
(binary gains, ideal over min(|P|, 10)) and MRR averaged over users. numpy only; needs ../shared.
Usage: scripts/ease-sampled-check.py   (seed 0: hit 0.7561, ndcg 0.2762, mrr 0.3964)"""
import collections, os
import numpy as np

base = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'shared', 'reference', 'ml-100k-recbole-split', 'ml-100k.')
def load(p):
    rows=[l.split('\t')[:2] for l in open(base+p+'.inter').read().split('\n')[1:] if l]
    return rows
tr,va,te=load('train'),load('valid'),load('test')
users=sorted({u for u,i in tr+va+te}); items=sorted({i for u,i in tr+va+te})
U={u:k for k,u in enumerate(users)}; I={i:k for k,i in enumerate(items)}
n,m=len(users),len(items)
X=np.zeros((n,m),dtype=np.float64)
for u,i in tr: X[U[u],I[i]]=1
G=X.T@X; G[np.diag_indices(m)]+=250.0
P=np.linalg.inv(G); B=P/(-np.diag(P)); B[np.diag_indices(m)]=0
S=X@B
used=collections.defaultdict(set)
for u,i in tr+va+te: used[U[u]].add(I[i])
pos=collections.defaultdict(list)
for u,i in te: pos[U[u]].append(I[i])
rng=np.random.default_rng(0)
hits=[];ndcgs=[];mrrs=[]
for u,ps in pos.items():
    cand=set(ps)
    for _ in range(len(ps)*100):
        while True:
            j=int(rng.integers(0,m))
            if j not in used[u]: break
        cand.add(j)
    cand=list(cand); sc=S[u,cand]
    order=[cand[k] for k in np.argsort(-sc,kind='stable')[:10]]
    h=[1 if j in ps else 0 for j in order]
    hits.append(1 if sum(h) else 0)
    dcg=sum(h[k]/np.log2(k+2) for k in range(10)); idcg=sum(1/np.log2(k+2) for k in range(min(10,len(ps))))
    ndcgs.append(dcg/idcg)
    mrrs.append(next((1/(k+1) for k in range(10) if h[k]),0))
print('hit',np.mean(hits),'ndcg',np.mean(ndcgs),'mrr',np.mean(mrrs))
