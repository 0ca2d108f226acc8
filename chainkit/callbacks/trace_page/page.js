"use strict";
// Renders the trace in #trace-data (built by chainkit/callbacks/trace_html.py). Runs come
// parent first. Every text of the trace goes in through visible(): as text nodes, never
// parsed as HTML, with invisible and bidirectional control characters shown as escapes.
const trace = JSON.parse(document.getElementById("trace-data").textContent);
const runs = trace.runs;
const timeline = document.getElementById("timeline");
const details = document.getElementById("details");
const indexOf = new Map(runs.map((run, index) => [run.id, index]));
const views = [];  // by run index: {group, row}
const KINDS = ["chain", "llm", "tool", "retriever"];
const ROLES = ["system", "user", "assistant", "tool"];

// Controls (but tab and newline), format characters (bidi marks and overrides, zero-width
// characters), lone surrogates, private-use and unassigned code points, line separators.
const INVISIBLE = /(?![\t\n])[\p{C}\p{Zl}\p{Zp}]/gu;

function escapeOf(char) {
  const code = char.codePointAt(0).toString(16);
  return code.length <= 4 ? "\\u" + code.padStart(4, "0") : "\\u{" + code + "}";
}

function escaped(text) {
  return String(text).replace(INVISIBLE, escapeOf);
}

function visible(text) {
  const fragment = document.createDocumentFragment();
  const value = String(text);
  let from = 0;
  for (const match of value.matchAll(INVISIBLE)) {
    fragment.append(value.slice(from, match.index));
    const mark = document.createElement("span");
    mark.className = "esc";
    mark.textContent = escapeOf(match[0]);
    mark.title = "invisible character U+" + match[0].codePointAt(0).toString(16).toUpperCase();
    fragment.append(mark);
    from = match.index + match[0].length;
  }
  fragment.append(value.slice(from));
  return fragment;
}

function element(tag, className, ...content) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const part of content) node.append(typeof part === "string" ? visible(part) : part);
  return node;
}

function ms(value) {
  if (value === null) return "unfinished";
  return value < 1000 ? value.toFixed(1) + " ms" : (value / 1000).toFixed(2) + " s";
}

function plural(count, noun) {
  const many = noun.endsWith("y") ? noun.slice(0, -1) + "ies" : noun + "s";
  return count.toLocaleString("en") + " " + (count === 1 ? noun : many);
}

// ---- The timeline: one section per root, on the root's own time axis.

function traceHead(root) {
  const facts = [
    new Date(root.start * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC",
    root.duration_ms === null ? "unfinished" : ms(root.duration_ms),
    plural(root.runs, "run"),
    root.input_tokens + " in / " + root.output_tokens + " out tokens",
    plural(root.model_calls, "model call"),
    plural(root.tool_calls, "tool call"),
  ];
  const head = element("div", "trace-head", element("b", "", root.name));
  if (root.errors) head.append(element("span", "err", plural(root.errors, "error")));
  if (root.retries) head.append(element("span", "retry", "↻ " + plural(root.retries, "retry")));
  for (const fact of facts) head.append(element("span", "", fact));
  return head;
}

function label(run) {
  const toggle = element("span", "toggle", run.children ? "▾" : "");
  const name = element("span", "name", run.name);
  const node = element("div", "label", toggle, element("span", "kind", run.kind + " "), name,
    element("span", "dur", " " + ms(run.duration_ms)));
  if (run.error !== null) node.append(element("span", "err", " ERROR"));
  const retried = run.retries.length ? ", " + plural(run.retries.length, "retry") : "";
  if (retried) node.append(element("span", "retry", " ↻" + run.retries.length));
  if (run.approval !== null) {
    node.append(element("span", "approval " + approvalClass(run.approval),
      " " + approvalMark(run.approval)));
  }
  if (run.citations !== null) {
    node.append(element("span", "citations " + citationsClass(run.citations),
      " " + citationsMark(run.citations)));
  }
  node.title = escaped(run.kind + " " + run.name + " (" + ms(run.duration_ms) + retried + ")");
  return node;
}

function bar(run, span) {
  const node = element("div", "bar " + (KINDS.includes(run.kind) ? run.kind : "other"));
  if (run.error !== null) node.classList.add("error");
  node.dataset.runId = run.id;
  node.dataset.parentId = run.parent_id === null ? "" : run.parent_id;
  node.dataset.depth = String(run.depth);
  node.dataset.kind = run.kind;
  const duration = run.duration_ms === null ? span - run.start_ms : run.duration_ms;
  node.style.left = (100 * run.start_ms / span) + "%";
  node.style.width = (100 * Math.max(duration, 0) / span) + "%";
  node.title = escaped(run.name + ": " + ms(run.duration_ms));
  return node;
}

function layOut() {
  const boxes = new Map();
  let section = null;
  runs.forEach((run, index) => {
    const root = trace.roots[run.root];
    if (run.depth === 0) {
      section = element("div", "trace", traceHead(root));
      timeline.append(section);
    }
    const row = element("div", "row", label(run));
    row.firstChild.style.paddingLeft = (run.depth * 14) + "px";
    row.append(element("div", "track", bar(run, root.span_ms > 0 ? root.span_ms : 1)));
    const kids = element("div", "children");
    const group = element("div", "run", row, kids);
    group.dataset.runId = run.id;
    boxes.set(run.id, kids);
    (run.depth === 0 ? section : boxes.get(run.parent_id)).append(group);
    views.push({group, row, section});
    row.addEventListener("click", (event) => {
      if (event.target.classList.contains("toggle")) toggle(index);
      else select(index);
    });
  });
}

function toggle(index, collapsed) {
  const {group, row} = views[index];
  if (!runs[index].children) return;
  const now = group.classList.toggle("collapsed", collapsed);
  row.querySelector(".toggle").textContent = now ? "▸" : "▾";
}

function expandAround(index) {
  for (let at = indexOf.get(runs[index].parent_id); at !== undefined;
    at = indexOf.get(runs[at].parent_id)) {
    toggle(at, false);
  }
}

// ---- Search and filters: a run shows if it matches, or one of its descendants does.

const search = document.getElementById("search");
const errorsOnly = document.getElementById("errors-only");
const kindFilter = document.getElementById("kind-filter");
const haystacks = [];

function haystack(index) {
  if (haystacks[index] === undefined) {
    const run = runs[index];
    haystacks[index] = [run.kind, run.name, run.model, JSON.stringify(run.inputs),
      JSON.stringify(run.outputs), JSON.stringify(run.error)].join("\n").toLowerCase();
  }
  return haystacks[index];
}

function matches(index, query) {
  const run = runs[index];
  if (errorsOnly.checked && run.error === null) return false;
  if (kindFilter.value && run.kind !== kindFilter.value) return false;
  return !query || haystack(index).includes(query);
}

function filter() {
  const query = search.value.trim().toLowerCase();
  const active = Boolean(query || errorsOnly.checked || kindFilter.value);
  const shown = new Uint8Array(runs.length);
  let matched = 0;
  for (let index = runs.length - 1; index >= 0; index--) {
    const hit = !active || matches(index, query);
    matched += hit;
    if (hit) shown[index] = 1;
    const parent = indexOf.get(runs[index].parent_id);
    if (shown[index] && parent !== undefined) {
      shown[parent] = 1;
      if (active) toggle(parent, false);
    }
    views[index].group.hidden = !shown[index];
    views[index].row.classList.toggle("context", active && !hit);
    if (runs[index].depth === 0) views[index].section.hidden = !shown[index];
  }
  document.getElementById("matches").textContent =
    active ? matched + " of " + plural(runs.length, "run") + " match" : "";
  document.body.dataset.shown = String(shown.reduce((sum, one) => sum + one, 0));
}

// ---- The details of the selected run.

function section(title, ...content) {
  return element("section", "", element("h3", "", title), ...content);
}

function pre(value) {
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  return element("pre", "", text === undefined ? String(value) : text);
}

function facts(pairs) {
  const table = element("table", "facts");
  for (const [name, value] of pairs) {
    if (value !== null && value !== undefined) {
      table.append(element("tr", "", element("th", "", name), element("td", "", String(value))));
    }
  }
  return table;
}

function isMessages(value) {
  return Array.isArray(value) &&
    value.every((item) => item !== null && typeof item === "object" && "role" in item);
}

function toolCall(call) {
  const fn = call && typeof call.function === "object" && call.function ? call.function : {};
  let args = fn.arguments;
  try {
    args = JSON.stringify(JSON.parse(args), null, 2);
  } catch (notJson) {
    // Arguments that are not JSON are shown as the model wrote them.
  }
  return element("div", "call", element("b", "", "→ " + String(fn.name)),
    element("span", "kind", "  " + String(call && call.id)), pre(args === undefined ? "" : args));
}

function message(item, cut) {
  const role = String(item.role);
  const head = element("div", "role", role);
  if (item.name) head.append(visible(" " + String(item.name)));
  if (item.tool_call_id) head.append(visible(" result of " + String(item.tool_call_id)));
  const node = element("div", "msg " + (ROLES.includes(role) ? role : "other"), head);
  const content = item.content === null || item.content === undefined ? "" : item.content;
  if (cut) {
    node.append(element("span", "cut", "… " + plural(cut, "character") + " as before"));
  }
  if (content !== "") node.append(pre(cut ? content.slice(cut) : content));
  for (const call of Array.isArray(item.tool_calls) ? item.tool_calls : []) {
    node.append(toolCall(call));
  }
  return node;
}

function chat(messages) {
  return element("div", "chat", ...messages.map((item) => message(item, 0)));
}

function prompt(run) {
  const messages = run.inputs;
  if (!isMessages(messages)) return section("Prompt", pre(messages));
  if (run.prompt_shared === null) return section("Prompt", chat(messages));
  const [count, chars] = run.prompt_shared;
  const shared = messages.slice(0, count).map((item) => message(item, 0));
  if (chars) shared.push(pre(String(messages[count].content).slice(0, chars)));
  const same = [count ? plural(count, "message") : "", chars ? plural(chars, "character") : ""];
  const summary = element("summary", "",
    same.filter(Boolean).join(" and ") + " as in the previous model call");
  const added = messages.slice(count).map((item, at) => message(item, at === 0 ? chars : 0));
  return section("Prompt: what it adds", element("details", "shared", summary, ...shared),
    ...(added.length ? added : [element("p", "cut", "nothing new")]));
}

function retry(item) {
  const error = item.error !== null && typeof item.error === "object" ?
    item.error.type + ": " + item.error.message : item.error;
  const wait = typeof item.wait === "number" ? ms(item.wait * 1000) : item.wait;
  return element("div", "retry-item",
    facts([["attempt", item.attempt], ["error", error], ["wait", wait]]),
    element("div", "kind", "discarded:"), pre(item.discarded === undefined ? "" : item.discarded));
}

// A person's decision on a tool call: a mark on the run's label and a section of its details.
const DECIDED = {approve: ["✓ approved", "approved"], deny: ["✗ denied", "denied"],
  edit: ["✎ edited", "edited"]};

function approvalMark(approval) {
  const known = DECIDED[approval.decision];
  if (approval.decision === undefined) return "⏸ awaiting approval";
  return known === undefined ? String(approval.decision) : known[0];
}

function approvalClass(approval) {
  const known = DECIDED[approval.decision];
  return known === undefined ? "pending" : known[1];
}

function approvalSection(approval) {
  const rows = [["decision", approvalMark(approval)], ["reason", approval.reason]];
  const parts = [facts(rows)];
  if (approval.arguments !== null && approval.arguments !== undefined) {
    parts.push(element("div", "kind",
      approval.decision === undefined ? "arguments:" : "edited arguments:"), pre(approval.arguments));
  }
  return section("Approval", ...parts);
}

// An answer chain's citations: a mark on the run's label (flagged when the answer cites an
// id no document shown has, or none at all) and a section of its details.
function citationsMark(citations) {
  if (citations.invented.length) {
    return "⚠ " + plural(citations.invented.length, "invented citation");
  }
  if (!citations.cited.length) return "⚠ no citation";
  return "✓ " + plural(citations.cited.length, "citation");
}

function citationsClass(citations) {
  return citations.invented.length || !citations.cited.length ? "flagged" : "checked";
}

function citationsSection(citations) {
  return section("Citations", facts([
    ["cited", citations.cited.length ? citations.cited.join(", ") : "none"],
    ["invented", citations.invented.length ? citations.invented.join(", ") : null],
  ]));
}

function describe(run) {
  const parts = [element("h2", "", run.kind + " " + run.name), facts([
    ["id", run.id], ["parent", run.parent_id], ["model", run.model],
    ["start", "+" + ms(run.start_ms)], ["duration", ms(run.duration_ms)],
    ["first token", run.first_token_ms === null ? null : ms(run.first_token_ms)],
    ["input tokens", run.input_tokens], ["output tokens", run.output_tokens],
  ])];
  if (run.error !== null) {
    parts.push(section("Error", pre(run.error.type + ": " + run.error.message)));
  }
  if (run.retries.length) parts.push(section("Retries", ...run.retries.map(retry)));
  if (run.approval !== null) parts.push(approvalSection(run.approval));
  if (run.citations !== null) parts.push(citationsSection(run.citations));
  if (run.options !== null && Object.keys(run.options).length) {
    parts.push(section("Options", facts(Object.entries(run.options).map(
      ([name, value]) => [name, typeof value === "string" ? value : JSON.stringify(value)]))));
  }
  if (run.kind === "llm") {
    parts.push(prompt(run));
    if (run.outputs !== null) {
      parts.push(section("Reply", isMessages([run.outputs]) ? chat([run.outputs]) :
        pre(run.outputs)));
    }
  } else {
    const show = (value) => isMessages(value) ? chat(value) : pre(value);
    parts.push(section("Input", show(run.inputs)));
    if (run.outputs !== null) parts.push(section("Output", show(run.outputs)));
  }
  return parts;
}

function select(index, fromHash) {
  for (const other of timeline.querySelectorAll(".row.selected")) {
    other.classList.remove("selected");
  }
  const run = runs[index];
  expandAround(index);
  views[index].row.classList.add("selected");
  details.replaceChildren(...describe(run));
  details.dataset.runId = run.id;
  if (fromHash) views[index].row.scrollIntoView({block: "center"});
  else history.replaceState(null, "", "#" + encodeURIComponent(run.id));
}

function selectFromHash() {
  let id = "";
  try {
    id = decodeURIComponent(location.hash.slice(1));
  } catch (badEscape) {
    return;
  }
  if (indexOf.has(id)) select(indexOf.get(id), true);
}

// ---- The page.

function header() {
  document.getElementById("title").append(visible(trace.title));
  document.getElementById("summary").textContent =
    plural(trace.roots.length, "trace") + ", " + plural(runs.length, "run");
  for (const kind of KINDS) {
    document.getElementById("legend").append(element("span", "", element("i", kind), kind));
  }
}

function setAll(collapsed) {
  runs.forEach((run, index) => toggle(index, collapsed));
}

header();
layOut();
search.addEventListener("input", filter);
errorsOnly.addEventListener("change", filter);
kindFilter.addEventListener("change", filter);
document.getElementById("expand-all").addEventListener("click", () => setAll(false));
document.getElementById("collapse-all").addEventListener("click", () => setAll(true));
window.addEventListener("hashchange", selectFromHash);
selectFromHash();
document.body.dataset.laidOut = String(runs.length);
