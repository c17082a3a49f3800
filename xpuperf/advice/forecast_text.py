"""The words for the parameters a ladder forecast fits (:mod:`xpuperf.advice.forecast`,
docs/plan.md §14)."""

from __future__ import annotations


def meaning(j: int, v: float, se: float, rows, g: int, model_loss_s) -> str:
    """What fitted parameter ``j`` (index into ``forecast.PARAMS``: intra fixed, intra per card,
    inter fixed, inter per doubling) of value ``v`` ± ``se`` seconds means, in words; ``rows``
    are the rungs (cards, nodes, cards per node, step s), ``g`` cards per node and
    ``model_loss_s`` the cost model's loss at N (for the inter-node link-shortfall reading)."""
    ms, pm = v * 1e3, se * 1e3
    if j == 0:
        word = "host/framework overhead" if v >= 0 else "the cost model over-prices by"
        counts = sorted({c for c, m, _, _ in rows if m == 1})
        return (
            f"{word} {abs(ms):.1f} ± {pm:.1f} ms per step from 1 to {counts[-1]} cards on "
            "one node, beyond the modelled communication"
        )
    if j == 1:
        return (
            f"{ms:.2f} ± {pm:.2f} ms per step for each further card of a node (host work "
            "that grows with the cards one host drives)"
        )
    if j == 2:
        first = min((c for c, m, _, _ in rows if m > 1))
        net = model_loss_s(first) - model_loss_s(g) if first > g else 0.0
        text = f"{ms:.1f} ± {pm:.1f} ms per step once the job spans nodes"
        if net > 0 and v > 0:
            text += (
                f"; as a link shortfall: inter-node links deliver {net / (net + v):.0%} of "
                f"the modelled rate at {first} cards"
            )
        return text
    return (
        f"{ms:.2f} ± {pm:.2f} ms per step more for each doubling of the node count "
        "(synchronisation, latency the cost model does not price)"
    )
