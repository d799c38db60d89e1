"""Chain-rule explorer: root KL + expected conditional KL = KL of the joint, on a depth-two tree."""

from __future__ import annotations

import matplotlib

from ._figure import STYLE, FigureImage
from ._format import format_number
from ._chain_rule_model import DEFAULT_TREE, ChainRuleState, chain_rule_from_controls, chain_rule_state
from ._view import (Explorer, column, float_slider, set_value, slider_value, value_label,
                    wrapping_row)

NAMES = {
    "root": "root KL(p<sub>0</sub>&#8214;q<sub>0</sub>):",
    "conditional.0": "KL(p(&middot;|a<sub>1</sub>=0)&#8214;q(&middot;|a<sub>1</sub>=0)):",
    "conditional.1": "KL(p(&middot;|a<sub>1</sub>=1)&#8214;q(&middot;|a<sub>1</sub>=1)):",
    "expected_conditional": "expected conditional KL, E<sub>a<sub>1</sub>~p<sub>0</sub></sub>[&middot;]:",
    "total": "root + expected conditional:",
    "joint": "KL of the joint p(a<sub>1</sub>, a<sub>2</sub>)&#8214;q(a<sub>1</sub>, a<sub>2</sub>):",
    "difference": "(root + expected conditional) &minus; joint:",
    "agree": "chain rule holds:",
}
CONTROLS = (
    # key, description, CSS suffix
    ("p0", "p(a1=0)", "p0"),
    ("q0", "q(a1=0)", "q0"),
    ("p_given_0", "p(a2=0 | a1=0)", "p-given-0"),
    ("p_given_1", "p(a2=0 | a1=1)", "p-given-1"),
    ("q_given_0", "q(a2=0 | a1=0)", "q-given-0"),
    ("q_given_1", "q(a2=0 | a1=1)", "q-given-1"),
)


class ChainRuleExplorer(Explorer):
    """The KL chain rule on a two-step tree with editable probabilities.

    Build it with :func:`chain_rule_explorer`. ``controls`` and ``labels`` are
    dicts of the widgets; ``state`` is the current
    :class:`~course.widgets.ChainRuleState`.
    """

    css_prefix = "m6-chain"
    _names = NAMES

    def __init__(self, first_p, first_q, cond_p, cond_q):
        chain_rule_state(first_p, first_q, cond_p, cond_q)  # a tree of the explorer's grid, or a clear error
        start = {
            "p0": first_p[0], "q0": first_q[0],
            "p_given_0": cond_p[0][0], "p_given_1": cond_p[1][0],
            "q_given_0": cond_q[0][0], "q_given_1": cond_q[1][0],
        }
        self.controls = {
            # Steps of 0.05, the explorers' grid (no notebook's tree lies on it: docs/DESIGN.md).
            key: float_slider(description, f"m6-chain-{css}", min=0.0, max=1.0, step=0.05,
                              value=float(start[key]))
            for key, description, css in CONTROLS
        }
        self.labels = {key: value_label(f"m6-chain-{key.replace('_', '-').replace('.', '-')}")
                       for key in NAMES}
        self.plot = FigureImage(8.6, 3.6)
        self._build_figure()
        controls = column(list(self.controls.values()), basis="360px", min_width="250px",
                          max_width="450px")
        values = column(list(self.labels.values()), basis="360px", min_width="250px")
        super().__init__("KL chain rule on a depth-two tree (second-step probabilities are "
                         "conditional on the first action)",
                         [wrapping_row([controls, values]), self.plot.view])
        self._observe_controls()
        self.refresh()

    def parameters(self) -> dict:
        """The current sliders as keyword arguments of :func:`chain_rule_from_controls`."""
        c = {key: slider_value(self.controls[key]) for key, _, _ in CONTROLS}
        return {"p0": c["p0"], "q0": c["q0"], "p_given": (c["p_given_0"], c["p_given_1"]),
                "q_given": (c["q_given_0"], c["q_given_1"])}

    def _compute(self) -> ChainRuleState:
        return chain_rule_from_controls(**self.parameters())

    def _show(self, s: ChainRuleState) -> None:
        # Figure first: once the numbers show the new state, the picture already does.
        self._draw(s)
        r = s.reasons
        for key in ("root", "expected_conditional", "total", "joint"):
            set_value(self.labels[key], NAMES[key], getattr(s, key), r.get(key))
        for a1 in (0, 1):
            key = f"conditional.{a1}"
            set_value(self.labels[key], NAMES[key], s.conditional[a1], r.get(key))
        set_value(self.labels["difference"], NAMES["difference"], s.difference, r.get("difference"),
                  digits=2, scientific=True)
        set_value(self.labels["agree"], NAMES["agree"], "yes" if s.agree else "NO")
        self.status.value = ""

    # ---------------------------------------------------------------- figure
    def _build_figure(self) -> None:
        fig = self.plot.figure
        with matplotlib.rc_context(STYLE):
            ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
            ax.axis("off")
            root = (0.07, 0.55)
            mids = [(0.36, 0.78), (0.36, 0.32)]
            leaves = [(0.66, 0.92), (0.66, 0.66), (0.66, 0.44), (0.66, 0.18)]
            line = dict(color="#555555", lw=1.2, zorder=1)
            node = dict(ha="center", va="center", fontsize=9,
                        bbox=dict(boxstyle="round,pad=0.3", fc="white", ec="#555555"))
            ax.text(*root, "start", **node)
            self._edge_texts, self._node_texts, self._leaf_texts = [], [], []
            for a1, mid in enumerate(mids):
                ax.plot([root[0], mid[0]], [root[1], mid[1]], **line)
                ax.text(*mid, f"a1={a1}", **node)
                self._edge_texts.append(ax.text((root[0] + mid[0]) / 2 - 0.01,
                                                (root[1] + mid[1]) / 2 + (0.05 if a1 == 0 else -0.05),
                                                "", ha="center", va="center", fontsize=8.5))
                self._node_texts.append(ax.text(mid[0], mid[1] - 0.1, "", ha="center", va="center",
                                                fontsize=8))
                for a2 in (0, 1):
                    leaf = leaves[2 * a1 + a2]
                    ax.plot([mid[0], leaf[0]], [mid[1], leaf[1]], **line)
                    ax.text(leaf[0], leaf[1], f"a2={a2}", **node)
                    self._edge_texts.append(ax.text((mid[0] + leaf[0]) / 2, (mid[1] + leaf[1]) / 2
                                                    + (0.045 if a2 == 0 else -0.045), "",
                                                    ha="center", va="center", fontsize=8.5))
                    self._leaf_texts.append(ax.text(leaf[0] + 0.05, leaf[1], "", ha="left",
                                                    va="center", fontsize=8.5))
            self._root_text = ax.text(root[0], root[1] - 0.12, "", ha="center", va="center",
                                      fontsize=8)
            self._sum_text = ax.text(0.01, 0.02, "", ha="left", va="bottom", fontsize=9.5)
            ax.text(0.71, 0.995, "joint probability of the path (a1, a2)", ha="left", va="top",
                    fontsize=8.5, color="#333333")
            self._ax = ax

    def _draw(self, s: ChainRuleState) -> None:
        texts = iter(self._edge_texts)
        for a1 in (0, 1):
            next(texts).set_text(f"p {s.first_p[a1]:.2f} | q {s.first_q[a1]:.2f}")
            self._node_texts[a1].set_text(f"KL = {format_number(s.conditional[a1])}")
            for a2 in (0, 1):
                next(texts).set_text(f"p {s.cond_p[a1, a2]:.2f} | q {s.cond_q[a1, a2]:.2f}")
                self._leaf_texts[2 * a1 + a2].set_text(
                    f"p = {s.joint_p[a1, a2]:.4f},  q = {s.joint_q[a1, a2]:.4f}")
        self._root_text.set_text(f"root KL\n= {format_number(s.root)}")
        verdict = "agree" if s.agree else "DISAGREE"
        summary = (f"{format_number(s.root)} + {format_number(s.expected_conditional)} = "
                   f"{format_number(s.total)}   vs   joint KL {format_number(s.joint)}: {verdict}")
        self._sum_text.set_text(summary)
        self.plot.describe(
            "Tree diagram: start, first actions a1 = 0 and a1 = 1, then a2 = 0 and a2 = 1 under "
            f"each. First step p = ({s.first_p[0]:.2f}, {s.first_p[1]:.2f}), q = "
            f"({s.first_q[0]:.2f}, {s.first_q[1]:.2f}); root KL {format_number(s.root)}; "
            f"conditional KLs {format_number(s.conditional[0])} and "
            f"{format_number(s.conditional[1])}. Root + expected conditional vs joint KL: "
            f"{summary}.")
        self.plot.render()


def chain_rule_explorer(first_p=DEFAULT_TREE["first_p"], first_q=DEFAULT_TREE["first_q"],
                        cond_p=DEFAULT_TREE["cond_p"], cond_q=DEFAULT_TREE["cond_q"]) -> ChainRuleExplorer:
    """Build the chain-rule explorer, starting from the explorer's own tree by default.

    Parameters
    ----------
    first_p, first_q : pair of float
        First-step distributions p0 and q0.
    cond_p, cond_q : 2 x 2 nested sequences
        ``cond[a1][a2] = p(a2 | a1)``.

    Every probability is a multiple of 0.05, as the sliders step (ValueError otherwise).

    Returns
    -------
    ChainRuleExplorer
        An ipywidgets container; display it as the last expression of a cell.
    """
    for name, value in (("first_p", first_p), ("first_q", first_q)):
        if len(value) != 2:
            raise ValueError(f"{name} must hold two probabilities, got {len(value)}")
    for name, value in (("cond_p", cond_p), ("cond_q", cond_q)):
        if len(value) != 2 or any(len(row) != 2 for row in value):
            raise ValueError(f"{name} must be 2 x 2 (cond[a1][a2] = p(a2 | a1))")
    return ChainRuleExplorer(first_p, first_q, cond_p, cond_q)
