"""Empirical privacy audit: each protocol run literally, attacked from simulations only, and
every reported bound checked from the other side (docs/audit.md).

:func:`audit_gossip` audits the gossip-averaging accounting (:mod:`sparsedp.gossip`) in every
view, :func:`audit_random_walk` the random-walk RDP (:mod:`sparsedp.randomwalk`),
:func:`audit_ppac` the PPAC leakage (:mod:`sparsedp.ppac`), :func:`audit_mf` the
matrix-factorisation accounting of DP-D-SGD and Muffliato-SGD(K) under PNDP
(:mod:`sparsedp.mf`).  The simulators are written
from the papers' protocols, not from the engine's matrices, and the attacker
(:mod:`sparsedp.audit.statistics`) sees only what a simulator records.
"""

from sparsedp.audit.gossip import AuditResult, audit_gossip
from sparsedp.audit.mf import MFAuditResult, audit_mf
from sparsedp.audit.ppac import PPACAuditResult, audit_ppac
from sparsedp.audit.randomwalk import RandomWalkAuditResult, audit_random_walk

__all__ = ["AuditResult", "MFAuditResult", "PPACAuditResult", "RandomWalkAuditResult",
           "audit_gossip", "audit_mf", "audit_ppac", "audit_random_walk"]
