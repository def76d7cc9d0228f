// OpenCode: the guide joins the system prompt (fetched once per session); the reminder and the nudge about the
// previous exchange join the latest user message as text parts, asked for once per user message however many
// model calls it takes; the compaction prompt gets the compaction hint.
const primed = new Map(); // sessionID -> the prime hook's answer
const turns = new Map(); // sessionID -> {id, answers} for its latest user message

export const MnemonPlugin = async () => ({
  "experimental.chat.system.transform": async (input, output) => {
    const session = input?.sessionID;
    if (!session) return; // an agent being generated: no session
    const answer = await (primed.get(session) ?? cache(primed, session, hook("prime", { session_id: session })));
    if (answer.system) output.system.push(answer.system);
    else primed.delete(session); // failed: asked again next call
  },
  "experimental.chat.messages.transform": async (_input, output) => {
    const messages = output?.messages ?? [];
    const at = messages.findLastIndex((m) => m?.info?.role === "user");
    if (at < 0) return;
    const user = messages[at];
    const { id, sessionID } = user.info;
    if (user.parts.some((p) => String(p?.id).startsWith("mnemon-"))) return;
    let turn = turns.get(sessionID);
    if (turn?.id !== id) {
      const payload = { session_id: sessionID, ...lastExchange(messages.slice(0, at)) };
      turn = cache(turns, sessionID, { id, answers: Promise.all([hook("remind", payload), hook("nudge", payload)]) });
    }
    for (const { part } of await turn.answers) {
      if (part) user.parts.push({ ...part, id: `mnemon-${id}-${user.parts.length}`, sessionID, messageID: id });
    }
  },
  "experimental.session.compacting": async (input, output) => {
    const answer = await hook("compact", { session_id: input?.sessionID });
    if (answer.context) output.context.push(answer.context);
  },
});
