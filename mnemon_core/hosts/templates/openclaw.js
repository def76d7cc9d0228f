// OpenClaw: `before_prompt_build` carries every phase. The guide goes to the system context (rebuilt on every
// turn, so it never piles up) and is fetched once per session; the reminder, the nudge about the previous
// exchange and, after a compaction, the compaction notice are prepended to the prompt.
const primed = new Map(); // session -> the prime hook's answer
const compacted = new Set(); // sessions compacted since their last prompt

function sessionOf(ctx) {
  return ctx?.sessionKey ?? ctx?.sessionId ?? "";
}

// One result from the hooks' answers: texts for the same field joined by a blank line.
function merge(answers) {
  const out = {};
  for (const answer of answers) {
    for (const [field, text] of Object.entries(answer ?? {})) {
      if (typeof text === "string" && text) out[field] = out[field] ? `${out[field]}\n\n${text}` : text;
    }
  }
  return out;
}

export default {
  id: "mnemon",
  name: "mnemon",
  description: "Graph memory: recall before answering, remember what lasts",
  register(api) {
    api.on("before_prompt_build", async (event, ctx) => {
      const session = sessionOf(ctx);
      const prime = primed.get(session) ?? cache(primed, session, hook("prime", { session }));
      const payload = { prompt: event?.prompt ?? "", session, ...lastExchange(event?.messages) };
      const answers = [prime];
      if (compacted.delete(session)) answers.push(hook("compact", { session }));
      answers.push(hook("remind", payload), hook("nudge", payload));
      const settled = await Promise.all(answers);
      if (!settled[0].appendSystemContext) primed.delete(session); // failed: asked again next prompt
      return merge(settled);
    });
    api.on("after_compaction", async (_event, ctx) => {
      compacted.add(sessionOf(ctx));
    });
  },
};
