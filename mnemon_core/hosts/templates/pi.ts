// Pi: `before_agent_start` appends the guide (fetched once per session), the reminder and the nudge about the
// previous exchange to this turn's system prompt, which Pi rebuilds on every turn, so nothing piles up in the
// session. `agent_end` asks for that nudge; after `session_compact` the next model call gets the compaction
// notice as a message of its own (Pi's compaction takes no instructions from an extension).
export default function mnemon(pi) {
  let prime = null; // the prime hook's answer
  let nudge = null; // the nudge hook's answer about the last exchange, for the next prompt
  let compacted = false;

  pi.on("session_start", async () => {
    prime = null;
    nudge = null;
    compacted = false;
  });

  pi.on("before_agent_start", async (event) => {
    prime ??= hook("prime", {});
    const answers = await Promise.all([prime, hook("remind", { prompt: event?.prompt ?? "" }), nudge ?? {}]);
    nudge = null;
    if (!answers[0].systemPrompt) prime = null; // failed: asked again next prompt
    const text = answers.map((a) => a.systemPrompt).filter(Boolean).join("\n\n");
    if (!text) return undefined;
    return { systemPrompt: [event?.systemPrompt, text].filter(Boolean).join("\n\n") };
  });

  pi.on("agent_end", async (event) => {
    nudge = hook("nudge", lastExchange(event?.messages));
  });

  pi.on("session_compact", async () => {
    compacted = true;
  });

  pi.on("context", async (event) => {
    if (!compacted) return undefined;
    compacted = false;
    const { message } = await hook("compact", {});
    if (!message) return undefined;
    return { messages: [...(event?.messages ?? []), { ...message, timestamp: Date.now() }] };
  });
}
