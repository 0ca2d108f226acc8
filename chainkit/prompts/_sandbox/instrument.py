"""Rewrites a parsed jinja2 template so that running it charges the rendering's budget.

jinja2 compiles loops, `~` and comparisons to plain Python, out of the sandbox's reach. Before
a template is compiled, each is rewritten into a call of a hook (an attribute of the budget
extension, which the sandbox calls directly):

- a loop's iterable is wrapped so that every item charges the operations of one pass through
  the body (its nodes, counted once here); a macro, call block or block body charges its own
  count each time it runs. A body is counted without the bodies nested in it, which charge for
  themselves, so a render's steps measure the template code it ran;
- `a ~ b` becomes a join that sizes each part before turning it into text;
- `a == b`, `a in b`, ... become a comparison charged by what it reads (a chain `a < b < c`
  evaluates all its operands before comparing), unless all it can read is a literal;
- `x[a:b]` becomes a slice charged by the length of its result, and the key of a dict literal
  `{key: value}` is sized before Python hashes it.
"""

from __future__ import annotations

from collections.abc import Sequence

from jinja2 import nodes

_SELF_CHARGING = (nodes.Macro, nodes.CallBlock, nodes.Block)

HOOK_STEPS = 3
"""What a `~`, a comparison, an attribute or item lookup or an arithmetic operator costs in
steps: each runs through a sandbox or hook call that takes about as long as three plain
template operations."""

_SANDBOXED = (nodes.Getattr, nodes.Getitem, nodes.BinExpr)


def instrument(tree: nodes.Template, hooks: str) -> nodes.Template:
    """`tree`, rewritten in place to call the hooks of the extension named `hooks`."""
    tree.body, _ = _Rewriter(hooks).rewrite_all(tree.body)
    return tree


class _Rewriter:
    def __init__(self, hooks: str) -> None:
        self._hooks = hooks

    def rewrite_all(self, items: Sequence[nodes.Node]) -> tuple[list[nodes.Node], int]:
        rewritten, cost = [], 0
        for item in items:
            node, item_cost = self.rewrite(item)
            rewritten.append(node)
            cost += item_cost
        return rewritten, cost

    def rewrite(self, node: nodes.Node) -> tuple[nodes.Node, int]:
        """The node to compile in place of `node`, and the operations one run of it costs."""
        if isinstance(node, nodes.For):
            return self._loop(node)
        if isinstance(node, _SELF_CHARGING):
            return self._charging_body(node)
        if isinstance(node, nodes.Concat):
            parts, cost = self.rewrite_all(node.nodes)
            return self._hook("concatenate", parts, node), HOOK_STEPS + cost
        if isinstance(node, nodes.Compare):
            return self._comparison(node)
        if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Slice):
            return self._slice(node.node, node.arg)
        if isinstance(node, nodes.Pair) and not isinstance(node.key, nodes.Const):
            return self._dict_entry(node)
        return node, self._children(node, skip=())

    def _children(self, node: nodes.Node, skip: tuple[str, ...]) -> int:
        """Rewrites the children of `node` (but not the fields in `skip`); returns the cost."""
        cost = HOOK_STEPS if isinstance(node, _SANDBOXED) else 1
        for name, value in node.iter_fields():
            if name in skip:
                continue
            if isinstance(value, nodes.Node):
                child, child_cost = self.rewrite(value)
                setattr(node, name, child)
                cost += child_cost
            elif isinstance(value, list) and all(isinstance(item, nodes.Node) for item in value):
                # (A folded constant may hold a plain list.)
                children, children_cost = self.rewrite_all(value)
                setattr(node, name, children)
                cost += children_cost
        return cost

    def _loop(self, loop: nodes.For) -> tuple[nodes.Node, int]:
        loop.body, body_cost = self.rewrite_all(loop.body)
        test_cost = 0
        if loop.test is not None:
            loop.test, test_cost = self.rewrite(loop.test)
        cost = self._children(loop, skip=("body", "test"))
        per_item = nodes.Const(max(1, body_cost + test_cost), lineno=loop.lineno)
        loop.iter = self._hook("iterate", [loop.iter, per_item], loop)
        return loop, cost

    def _charging_body(
        self, node: nodes.Macro | nodes.CallBlock | nodes.Block
    ) -> tuple[nodes.Node, int]:
        node.body, body_cost = self.rewrite_all(node.body)
        cost = self._children(node, skip=("body",))
        charge = self._hook("charge_body", [nodes.Const(max(1, body_cost))], node)
        node.body.insert(0, nodes.ExprStmt(charge, lineno=node.lineno))
        return node, cost

    def _comparison(self, comparison: nodes.Compare) -> tuple[nodes.Node, int]:
        if _reads_a_literal_only(comparison):
            return comparison, self._children(comparison, skip=())
        first, cost = self.rewrite(comparison.expr)
        chain: list[nodes.Node] = [first]
        for operand in comparison.ops:
            expression, operand_cost = self.rewrite(operand.expr)
            chain += [nodes.Const(operand.op, lineno=comparison.lineno), expression]
            cost += operand_cost
        return self._hook("compare", chain, comparison), HOOK_STEPS + cost

    def _slice(self, sequence: nodes.Expr, bounds: nodes.Slice) -> tuple[nodes.Node, int]:
        # jinja2 compiles `x[a:b]` to plain Python slicing, past the sandbox's getitem.
        parts, cost = self.rewrite_all([sequence])
        for bound in (bounds.start, bounds.stop, bounds.step):
            if bound is None:
                parts.append(nodes.Const(None, lineno=bounds.lineno))
            else:
                rewritten, bound_cost = self.rewrite(bound)
                parts.append(rewritten)
                cost += bound_cost
        return self._hook("take_slice", parts, bounds), HOOK_STEPS + cost

    def _dict_entry(self, pair: nodes.Pair) -> tuple[nodes.Node, int]:
        # Python hashes the key of `{key: value}` without the sandbox: a tuple is hashed item
        # by item, every time.
        cost = self._children(pair, skip=())
        pair.key = self._hook("hashed", [pair.key], pair)
        return pair, cost + HOOK_STEPS

    def _hook(self, name: str, args: list[nodes.Node], where: nodes.Node) -> nodes.Call:
        hook = nodes.ExtensionAttribute(self._hooks, name, lineno=where.lineno)
        return nodes.Call(hook, args, [], None, None, lineno=where.lineno)


def _reads_a_literal_only(comparison: nodes.Compare) -> bool:
    """Whether each comparison in the chain costs no more than the size of a literal in the
    template: `x == 'user'` stops within the literal, `x in ('a', 'b')` reads only it. Such
    comparisons, most of a chat template's, are left as jinja2 compiles them."""
    left = comparison.expr
    for operand in comparison.ops:
        if operand.op in ("in", "notin"):
            if not _literal(operand.expr):
                return False
        elif not (_literal(left) or _literal(operand.expr)):
            return False
        left = operand.expr
    return True


def _literal(node: nodes.Node) -> bool:
    if isinstance(node, nodes.Const):
        return True
    return isinstance(node, nodes.List | nodes.Tuple) and all(map(_literal, node.items))
