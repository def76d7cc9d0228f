"""LangChain: answer from memory with an LCEL chain, and keep the conversation with MnemonMemory.

    pip install "mnemon-core[langchain]" && python cookbook/langchain_chain.py

The chain is `retriever | format_documents | prompt | model`: mnemon recalls what matters for the question
(keyword, entity, vector and graph signals), the prompt puts it in front of the model. MnemonMemory then
saves each turn, so the next question can recall it. Offline, the model is a scripted fake; to use a real
one, change the line marked MODEL. Uses a throw-away data dir unless MNEMON_DATA_DIR is set.
"""

from __future__ import annotations

import os
import tempfile

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from langchain_mnemon import MnemonMemory, MnemonRetriever, format_documents
from mnemon_core import Memory

ANSWERS = [
    "We chose Qdrant because its payload filtering is fast.",
    "You said you prefer short answers, so: Qdrant, for filtering speed.",
]


def main() -> None:
    data_dir = os.environ.get("MNEMON_DATA_DIR") or tempfile.mkdtemp(prefix="mnemon-langchain-")
    mem = Memory(data_dir=data_dir, store="cookbook-langchain")
    mem.remember("We chose Qdrant as the vector store because its payload filtering is fast",
                 category="decision", importance=5)
    mem.remember("Qdrant runs on the staging cluster since March", category="fact")
    mem.remember("The weekly sync moved to Thursdays", category="context")

    # MODEL — for a real model: from langchain_openai import ChatOpenAI; model = ChatOpenAI(model="gpt-4o-mini")
    model = GenericFakeChatModel(messages=iter(ANSWERS))

    retriever = MnemonRetriever(memory=mem, k=2)
    prompt = ChatPromptTemplate.from_messages([
        ("system", "Answer briefly, using these memories when they help:\n{context}"),
        ("human", "{question}"),
    ])
    chain = (
        {"context": retriever | format_documents, "question": RunnablePassthrough()}
        | prompt
        | model
        | StrOutputParser()
    )

    question = "Why did we pick Qdrant?"
    print("question:", question)
    print("memories:\n" + format_documents(retriever.invoke(question)))
    print("answer:", chain.invoke(question))

    # A conversation: load memories before each turn, save the turn after it (here: both sides).
    memory = MnemonMemory(memory=mem, keep="both", k=2)
    memory.save_context({"input": "I prefer short answers."}, {"output": "Understood."})
    turn = {"input": "Remind me: which vector store, in short?"}
    history = memory.load_memory_variables(turn)["history"]
    reply = (prompt | model | StrOutputParser()).invoke({"context": history, "question": turn["input"]})
    memory.save_context(turn, {"output": reply})
    print("\nloaded for the next turn:\n" + history)
    print("answer:", reply)
    print(f"\nsaved {len(memory.written_ids)} insights from the conversation; data dir: {data_dir}")
    mem.close()


if __name__ == "__main__":
    main()
