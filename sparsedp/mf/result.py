"""The result of :func:`sparsedp.mf.mf_sensitivity`: bounds with kinds, strict JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from sparsedp.linalg.sign_bounds import Bound
from sparsedp.plain import plain
from sparsedp.privacy import gaussian_epsilon, gaussian_mu, rdp_epsilon
from sparsedp.reprs import short_repr


@dataclass(frozen=True)
class MFResult:
    """Bounds on the squared sensitivity ``sens_Pi(C; B)^2 = max_pi max_x x^T M_pi x`` of one
    target towards one attacker set (Bellet et al., Def. 6 and Thm 7).

    ``lower <= sens^2 <= upper`` always (``upper`` is infinite when no certified upper bound
    exists, or when the range condition fails: then ``range_condition`` is False and
    ``lower`` is infinite too).  ``exact`` (``gradients="scalar"`` only): the exhaustive sign
    maximum, with ``exact <= sens^2 <= exact + exact_error``.  ``thm7``: Theorem 7's bound
    ``max_pi sum_(s,t in pi) |M_st|`` as a certified upper value (``None`` when not
    certified).  ``bounds``: every bound, maximised over the patterns, with its kind
    (``lower``, ``exact``, ``certified upper``, ``estimate``).

    Attributes
    ----------
    target : int
        The protected row of W.
    attackers : tuple of int
        The colluding attacker rows (empty for local DP).
    T : int
        Gradient steps.
    algorithm, participation : dict
        The algorithm (name, K, noise correlation) and the participation scheme.
    trust : str
        The trust model.
    gradients : str
        ``"vector"`` or ``"scalar"``.
    lower, upper : float
        ``lower <= sens^2 <= upper``; ``upper`` is certified.
    exact, exact_error : float or None
        The exhaustive sign maximum and its error (scalar gradients only).
    thm7 : float or None
        Theorem 7's bound, certified, or None.
    range_condition : bool
        Whether the target's columns of A lie in range(B); False means not private.
    method : str
        How M was computed.
    bounds : tuple of Bound
        Every bound with its kind.
    observed, known_noise : tuple of int
        The rows whose messages the attackers see, and whose noise they know.
    patterns : int
        Participation patterns maximised over.
    solver : dict
        Solver details.
    notes : tuple of str
        What the result does and does not claim.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> from sparsedp.mf import mf_sensitivity
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="row-normalised-self-loops")
    >>> r = mf_sensitivity(W, 0, [4], 6, gradients="scalar")
    >>> round(r.upper, 6), r.range_condition, round(r.rdp(alpha=2.0, sigma=5.0), 6)
    (0.030404, True, 0.001216)
    """

    target: int
    attackers: tuple[int, ...]
    T: int
    algorithm: dict
    trust: str
    participation: dict
    gradients: str
    lower: float
    upper: float
    exact: float | None
    exact_error: float | None
    thm7: float | None
    range_condition: bool
    method: str
    bounds: tuple[Bound, ...]
    observed: tuple[int, ...] = ()
    known_noise: tuple[int, ...] = ()
    patterns: int = 1
    solver: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    __repr__ = short_repr

    @property
    def gap(self) -> float:
        return max(self.upper - self.lower, 0.0) if self.upper != self.lower else 0.0

    @property
    def relative_gap(self) -> float:
        return 0.0 if self.upper == self.lower else (self.upper - self.lower) / self.upper

    def mu(self, sigma: float) -> float:
        """mu-GDP at noise multiplier sigma, from the certified upper bound."""
        return gaussian_mu(self.upper, sigma)

    def rdp(self, alpha: float, sigma: float) -> float:
        """RDP epsilon at order alpha, from the certified upper bound."""
        return float(rdp_epsilon(self.upper, sigma, alpha))

    def epsilon(self, sigma: float, delta: float) -> float:
        """(epsilon, delta)-DP epsilon, from the certified upper bound."""
        return gaussian_epsilon(self.upper, sigma, delta)

    def to_dict(self) -> dict:
        """Plain data, strict JSON (infinity as the string ``"infinity"``)."""
        return plain({**asdict(self), "gap": self.gap, "relative_gap": self.relative_gap})
