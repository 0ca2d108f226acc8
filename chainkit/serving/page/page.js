// The chat page of `chainkit serve`. A message runs the agent through POST /stream, read
// with fetch() (EventSource can neither POST nor send headers) and parsed as Server-Sent
// Events as they arrive; each event of the run shows as a step, the root's chain_end as the
// answer. A run paused for approval shows its waiting calls with buttons that post the
// decisions to /runs/{id}/resume. Every text is set with textContent, never parsed as HTML:
// what a model or a tool wrote stays text.
"use strict";

(() => {
  const chat = document.getElementById("chat");
  const form = document.getElementById("ask");
  const message = document.getElementById("message");
  const sendButton = document.getElementById("send");
  const statusLine = document.getElementById("status");
  // The page's own header: the server takes the session cookie for a POST only with it,
  // which no other site's form or script can send.
  const HEADERS = {
    "Content-Type": "application/json",
    "Accept": "text/event-stream, application/json",
    "X-Chainkit-Page": "1",
  };

  // A chain served with a history per session remembers this page's conversation (a new
  // one each time the page is loaded) under a random id.
  const session = document.body.dataset.sessions === "yes" ? randomId() : null;

  function randomId() {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function shown(value) {
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }

  function post(path, body) {
    return fetch(path, {
      method: "POST", headers: HEADERS, body: JSON.stringify(body),
      credentials: "same-origin", cache: "no-store",
    });
  }

  function scrolled(update) {
    const atBottom = chat.scrollHeight - chat.scrollTop - chat.clientHeight < 40;
    update();
    if (atBottom) chat.scrollTop = chat.scrollHeight;
  }

  // One event of a Server-Sent Events stream: its name and its data (JSON).
  function parseFrame(frame) {
    let name = "message";
    const data = [];
    for (const line of frame.split(/\r?\n/)) {
      if (line === "" || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") name = value;
      else if (field === "data") data.push(value);
    }
    return data.length ? {name, data: JSON.parse(data.join("\n"))} : null;
  }

  async function* serverSentEvents(response) {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const end = /\r?\n\r?\n/;
    let buffer = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += value;
      let match;
      while ((match = end.exec(buffer)) !== null) {
        const event = parseFrame(buffer.slice(0, match.index));
        buffer = buffer.slice(match.index + match[0].length);
        if (event !== null) yield event;
      }
    }
  }

  class Turn {
    constructor(text) {
      this.root = el("section", "turn");
      this.root.append(el("div", "user text", text));
      const agent = el("div", "agent");
      this.details = el("details");
      this.details.open = true;
      this.summary = el("summary", null, "Steps");
      this.steps = el("ol", "steps");
      this.details.append(this.summary, this.steps);
      this.answer = el("div", "answer text");
      this.waitingList = el("div", "waiting-list");
      this.meta = el("div", "meta");
      agent.append(this.details, this.waitingList, this.answer, this.meta);
      this.root.append(agent);
      this.byRun = new Map();
      this.runId = null;
      this.ended = false;
      chat.append(this.root);
    }

    step(kind, what, text) {
      const item = el("li", "step " + kind);
      item.append(el("span", "what", what));
      const body = el("pre", null, text);
      item.append(body);
      this.steps.append(item);
      this.summary.textContent = `Steps (${this.steps.children.length})`;
      return body;
    }

    // A run's response: the events of a stream, or the JSON of a run that waited.
    async read(response) {
      const runId = response.headers.get("X-Run-Id");
      if (runId && !this.runId) {
        this.runId = runId;
        this.meta.append(el("span", "run-id", `run ${runId}`));
      }
      if (!response.ok) return this.refused(response);
      const type = response.headers.get("Content-Type") || "";
      if (!type.startsWith("text/event-stream")) {
        const body = await response.json();
        return this.finish(body.outputs === undefined ? body : body.outputs);
      }
      this.ended = false;
      for await (const {name, data} of serverSentEvents(response)) {
        scrolled(() => this.onEvent(name, data));
      }
      if (!this.ended) this.fail("the stream ended before the run did");
    }

    async refused(response) {
      if (response.status === 401) {
        return this.fail("Signed out: reload the page to sign in again.");
      }
      let text = `${response.status} ${response.statusText}`;
      try {
        const body = await response.json();
        if (body && body.error && body.error.message) text = body.error.message;
      } catch (notJson) {
        // the status says it
      }
      this.fail(text);
    }

    onEvent(name, event) {
      if (name === "error") return this.fail(event.error ? event.error.message : "the run failed");
      const data = event.data || {};
      const root = event.parent_id === null || event.parent_id === undefined;
      switch (event.kind) {
        case "llm_start":
          this.byRun.set(event.run_id, this.step("llm", `${event.name} writes`, ""));
          break;
        case "token":
          this.modelText(event).append(String(data.text));
          break;
        case "llm_end":
          this.modelEnded(event, data.message || {});
          break;
        case "agent_action":
          this.step("action", `calls ${data.action.tool}`, shown(data.action.tool_input));
          break;
        case "tool_start":
          this.byRun.set(event.run_id, this.step("tool", event.name, shown(data.input)));
          break;
        case "tool_end":
          this.toolEnded(event, `→ ${shown(data.output)}`);
          break;
        case "tool_error":
          this.toolEnded(event, `failed: ${data.error ? data.error.message : ""}`);
          break;
        case "approval_required":
          this.step("approval", `${data.tool} waits for approval`, shown(data.arguments));
          break;
        case "approval_decided":
          this.step("approval", `${data.tool}: ${data.decision}`,
            data.reason || (data.arguments === null ? "" : shown(data.arguments)));
          break;
        case "retry":
          this.step("error", "retry", `attempt ${data.attempt} failed; trying again`);
          break;
        case "llm_error":
          this.step("error", `${event.name} failed`, data.error ? data.error.message : "");
          break;
        case "chain_error":
          // The stream's error event that follows says how the run ended.
          if (root) this.step("error", "the run failed", data.error ? data.error.message : "");
          break;
        case "chain_end":
          if (root) this.finish(data.outputs);
          break;
        default:
          break;
      }
    }

    modelText(event) {
      let text = this.byRun.get(event.run_id);
      if (text === undefined) {
        text = this.step("llm", `${event.name} writes`, "");
        this.byRun.set(event.run_id, text);
      }
      return text;
    }

    modelEnded(event, reply) {
      const text = this.modelText(event);
      if (text.textContent === "" && typeof reply.content === "string") {
        text.textContent = reply.content;
      }
      for (const call of reply.tool_calls || []) {
        const fn = call.function || {};
        text.append(`${text.textContent ? "\n" : ""}calls ${fn.name}(${fn.arguments})`);
      }
    }

    toolEnded(event, text) {
      const step = this.byRun.get(event.run_id);
      if (step === undefined) this.step("tool", event.name, text);
      else step.append(`\n${text}`);
    }

    finish(outputs) {
      this.ended = true;
      const pending = outputs ? outputs.pending : undefined;
      const paused = pending && pending.status === "paused" && Array.isArray(pending.waiting);
      this.answer.hidden = Boolean(paused);
      if (paused) return this.showWaiting(pending.waiting);
      const answer = outputs && typeof outputs.output === "string" ? outputs.output : shown(outputs);
      this.answer.textContent = answer;
      this.linkTrace();
    }

    fail(text) {
      this.ended = true;
      this.answer.hidden = this.answer.textContent === "";
      this.meta.append(el("span", "failed", text));
    }

    // The trace of the finished run, when this server process kept it.
    async linkTrace() {
      if (!this.runId) return;
      const path = `runs/${encodeURIComponent(this.runId)}/trace`;
      const response = await fetch(path, {method: "HEAD", cache: "no-store"});
      if (!response.ok) return;
      const link = el("a", "trace-link", "trace");
      link.href = path;
      link.target = "_blank";
      link.rel = "noopener";
      this.meta.append(link);
    }

    // The calls a paused run waits on, each with its choices; once each has its decision,
    // they are posted together and the run's continuation streams into this turn (the
    // cards stay, with the decisions taken, above the answer).
    showWaiting(waiting) {
      const decisions = {};
      for (const call of waiting) {
        const decide = (decision) => {
          decisions[call.key] = decision;
          if (waiting.every((each) => decisions[each.key] !== undefined)) this.resume(decisions);
        };
        this.waitingList.append(call.kind === "input" ? asking(call, decide) : approving(call, decide));
      }
    }

    async resume(decisions) {
      statusLine.textContent = "running…";
      try {
        const path = `runs/${encodeURIComponent(this.runId)}/resume`;
        await this.read(await post(path, {decisions, stream: true}));
      } catch (error) {
        this.fail(`the connection failed: ${error.message}`);
      } finally {
        statusLine.textContent = "";
      }
    }
  }

  function button(className, text) {
    const made = el("button", className, text);
    made.type = "button";
    return made;
  }

  // A call waiting for approval: approve it, deny it (with a reason for the agent), or edit
  // its arguments (JSON) and run it with those.
  function approving(call, decide) {
    const card = el("div", "waiting");
    card.append(el("span", "tool", `${call.tool} waits for your approval`));
    const input = el("pre", "input", shown(call.input));
    const row = el("div", "decide");
    const approve = button("approve", "Approve");
    const deny = button("deny", "Deny");
    const edit = button("edit", "Edit");
    const reason = el("input", "reason");
    reason.placeholder = "why (told to the agent if you deny)";
    reason.setAttribute("aria-label", "reason");
    const editor = el("textarea", "arguments");
    editor.hidden = true;
    editor.rows = 4;
    editor.setAttribute("aria-label", "arguments");
    const note = el("span", "failed");
    const chosen = (decision, text) => {
      for (const control of [approve, deny, edit, reason, editor]) control.disabled = true;
      note.textContent = "";
      row.append(el("span", "decision", text));
      decide(decision);
    };
    approve.addEventListener("click", () => chosen({kind: "approve"}, "approved"));
    deny.addEventListener("click", () => chosen(
      {kind: "deny", reason: reason.value || "denied by the user"}, "denied"));
    edit.addEventListener("click", () => {
      if (editor.hidden) {
        editor.value = JSON.stringify(call.arguments ?? {}, null, 2);
        editor.hidden = false;
        edit.textContent = "Run with these arguments";
        return;
      }
      try {
        chosen({kind: "edit", arguments: JSON.parse(editor.value)}, "edited");
      } catch (error) {
        note.textContent = `not JSON: ${error.message}`;
      }
    });
    row.append(approve, deny, reason, edit);
    card.append(input, editor, row, note);
    return card;
  }

  // A tool's question to the user: the answer, as text, is what the tool gets.
  function asking(call, decide) {
    const card = el("div", "waiting");
    card.append(el("span", "tool", `${call.tool} asks`));
    card.append(el("pre", "question", shown(call.question)));
    const row = el("div", "decide");
    const answer = el("input", "answer-input");
    answer.setAttribute("aria-label", "answer");
    const send = button("send-answer", "Answer");
    send.addEventListener("click", () => {
      answer.disabled = send.disabled = true;
      decide(answer.value);
    });
    row.append(answer, send);
    card.append(row);
    return card;
  }

  async function ask(text) {
    const turn = new Turn(text);
    chat.scrollTop = chat.scrollHeight;
    try {
      const body = session === null ? {input: text} : {input: text, session_id: session};
      await turn.read(await post("stream", body));
    } catch (error) {
      turn.fail(`the connection failed: ${error.message}`);
    }
  }

  form.addEventListener("submit", async (submitted) => {
    submitted.preventDefault();
    const text = message.value;
    if (!text.trim() || sendButton.disabled) return;
    message.value = "";
    sendButton.disabled = true;
    statusLine.textContent = "running…";
    const hello = document.getElementById("hello");
    if (hello) hello.remove();
    try {
      await ask(text);
    } finally {
      sendButton.disabled = false;
      statusLine.textContent = "";
      message.focus();
    }
  });

  document.getElementById("sign-out").addEventListener("click", async () => {
    await fetch("logout", {method: "POST", headers: HEADERS});
    window.location.reload();
  });

  message.addEventListener("keydown", (pressed) => {
    if (pressed.key === "Enter" && !pressed.shiftKey && !pressed.isComposing) {
      pressed.preventDefault();
      form.requestSubmit();
    }
  });
})();
