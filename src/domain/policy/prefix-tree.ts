// The index of `matches_resource` rules by literal prefix: a radix tree over the prefixes, so a
// request's resource finds every prefix it starts with in one walk along its characters, whatever
// the number of prefixes or their lengths. (Probing a map with each distinct prefix length hashed
// a fresh slice of the resource per length: about a quarter of a millisecond a decision for a
// policy of 500 prefixes of 500 lengths.)

/** A node: the text of the edge into it, the rules whose prefix ends here, its children by next character. */
export interface PrefixNode {
  label: string;
  rules: number[] | undefined;
  children: Map<number, PrefixNode> | undefined;
}

export function emptyPrefixTree(): PrefixNode {
  return { label: '', rules: undefined, children: undefined };
}

/** Adds `rule` under `prefix`; a rule added twice in a row under one prefix is kept once. */
export function addPrefix(root: PrefixNode, prefix: string, rule: number): void {
  let node = root;
  let pos = 0;
  for (;;) {
    if (pos === prefix.length) {
      const rules = (node.rules ??= []);
      if (rules[rules.length - 1] !== rule) rules.push(rule);
      return;
    }
    const first = prefix.charCodeAt(pos);
    const child = node.children?.get(first);
    if (child === undefined) {
      (node.children ??= new Map()).set(first, { label: prefix.slice(pos), rules: [rule], children: undefined });
      return;
    }
    const common = commonLength(child.label, prefix, pos);
    if (common < child.label.length) {
      // The new prefix leaves the edge part-way: split it there.
      const middle: PrefixNode = { label: child.label.slice(0, common), rules: undefined, children: new Map([[child.label.charCodeAt(common), child]]) };
      child.label = child.label.slice(common);
      node.children!.set(first, middle);
      node = middle;
    } else node = child;
    pos += common;
  }
}

function commonLength(label: string, text: string, from: number): number {
  const max = Math.min(label.length, text.length - from);
  let i = 0;
  while (i < max && label.charCodeAt(i) === text.charCodeAt(from + i)) i++;
  return i;
}

/**
 * Appends to `out` the rules of every prefix `text` starts with, shortest first, and returns how
 * many edges it compared (the evaluator's index probes).
 */
export function walkPrefixes(root: PrefixNode, text: string, out: (readonly number[])[]): number {
  let node = root;
  let pos = 0;
  let probes = 0;
  for (;;) {
    if (node.rules !== undefined) out.push(node.rules);
    if (node.children === undefined || pos >= text.length) return probes;
    const child = node.children.get(text.charCodeAt(pos));
    if (child === undefined) return probes;
    probes++;
    if (!text.startsWith(child.label, pos)) return probes;
    pos += child.label.length;
    node = child;
  }
}
