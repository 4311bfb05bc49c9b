"""Conversations and skills for the context tests, sized to an exact token count."""

from __future__ import annotations

from typing import Any

from kb_indexer.context.compress import total_tokens

FACTS = ["I prefer answers in Korean.", "We chose PPO over DQN for the agent.",
         "The run scored 0.73 on the benchmark.", "My colleague Alice Park owns the deploy pipeline.",
         "Always use the staging cluster named Orion-7."]
PAD = " and some more detail about the rollout buffer"


def conversation(turns: int = 10, system: str = "You are a helpful assistant for the RL team.") -> list[dict[str, Any]]:
    """system, then ``turns`` user/assistant pairs, then a final user message."""
    msgs = [{"role": "system", "content": system}]
    for i in range(turns):
        msgs.append({"role": "user", "content": f"{FACTS[i % len(FACTS)]} Tell me about step {i} of the training "
                                                f"loop in detail."})
        msgs.append({"role": "assistant", "content": f"Step {i} of the training loop collects rollouts, computes "
                                                     f"advantages and updates the policy. " * 3})
    msgs.append({"role": "user", "content": "So what should we do next with the policy?"})
    return msgs


def pad_to(messages: list[dict[str, Any]], skills: list[dict[str, Any]], target: int,
           index: int = 1) -> list[dict[str, Any]]:
    """A copy of ``messages`` whose message ``index`` is padded one character at a time until
    ``total_tokens(messages, skills) == target`` exactly."""
    msgs = [dict(m) for m in messages]
    assert total_tokens(msgs, skills) <= target, (total_tokens(msgs, skills), target)
    i = 0
    while total_tokens(msgs, skills) < target:
        msgs[index]["content"] += PAD[i % len(PAD)]
        i += 1
    assert total_tokens(msgs, skills) == target
    return msgs


def skill(name: str, priority: str, steps: int) -> dict[str, Any]:
    body = "\n\n".join(f"## Step {i}\nRun the command number {i} with care. Then check the output of command {i} "
                       f"and write it down in the log file. This paragraph explains the background at length."
                       for i in range(steps))
    return {"name": name, "content": body, "priority": priority}


def non_system_roles(messages: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in messages if m["role"] != "system"]


def alternates(roles: list[str]) -> bool:
    return all(a != b for a, b in zip(roles, roles[1:]))


def scripted_client(kb: Any, *answers: Any):
    """(an LLMClient over the scripted fake backend with ``answers`` queued, the fake), no retries or sleeps."""
    from fake_llm import FakeBackend
    from kb_indexer.llm.config import LLMOptions, resolve
    from kb_indexer.llm.structured import LLMClient
    fake = FakeBackend(list(answers))
    config = resolve(LLMOptions(backend="fake", retries=0))
    return LLMClient(config, conn=kb.conn, backend=fake, sleep=lambda s: None), fake
