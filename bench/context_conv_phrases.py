"""Wording and slot values for bench/context_conv.py: the fact templates and slot vocabularies of the two
families (dev, heldout), the filler phrases both share, and the made-up skills.

The families differ in sentence templates, connectors and slot values (no value occurs in both), so that
heldout conversations test a compressor on wording and values it was not tuned on.
"""

from __future__ import annotations

import random
from typing import Callable

KINDS = ("preference", "decision", "result", "name")

MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December".split("|")


def _v(items: str) -> list[str]:
    return items.split("|")


def _num(lo: int, hi: int, fmt: str, step: int = 1) -> Callable[[random.Random], str]:
    return lambda r: fmt.format(r.randrange(lo, hi + 1, step))


def _pick(*lists: str) -> Callable[[random.Random], str]:
    """A value made of one choice from each list, in order."""
    parts = [_v(x) for x in lists]
    return lambda r: "".join(r.choice(p) for p in parts)


# Slot vocabularies: disjoint between the families (a value seen in tuning never shows up in heldout).
VOCAB = {
    "dev": {
        "lang": _v("Korean|Portuguese|Finnish|Turkish|Vietnamese|Polish|Greek|Ukrainian"),
        "plang": _v("Rust|Kotlin|Scala|Julia|Elixir|Swift|Dart"),
        "words": _num(120, 300, "{} words", 10),
        "fmt": _v("YAML|TOML|TSV|NDJSON|HTML tables"),
        "datefmt": _v("DD.MM.YYYY|YYYY/MM/DD|DD/MM/YY"),
        "editor": _v("Neovim|Helix|Sublime Text|VS Code"),
        "tz": _v("UTC+2|UTC-5|UTC+9|UTC+5:30|UTC-8"),
        "case": _v("camelCase|snake_case|PascalCase|kebab-case"),
        "analogy": _v("cooking|football|gardening|cycling|orchestra"),
        "browser": _v("Firefox|Safari|Brave|Vivaldi"),
        "algo": _v("PPO|DQN|SAC|TD3|IMPALA|Rainbow|DDPG|A2C|R2D2"),
        "db": _v("PostgreSQL|MongoDB|DuckDB|ClickHouse|Cassandra|MySQL"),
        "region": _v("eu-west-1|us-east-2|ap-southeast-1|eu-central-1|us-west-2"),
        "tool": _v("Airflow|Dagster|Prefect|Luigi|dbt"),
        "date": lambda r: f"{r.choice(MONTHS)} {r.randint(2, 28)}",
        "model": _v("Llama 3.1 8B|Mistral 7B|Qwen2.5 14B|Gemma 2 9B|Mixtral 8x7B"),
        "opt": _v("AdamW|Lion|Adafactor|LAMB|Sophia"),
        "queue": _v("RabbitMQ|Kafka|NATS|Celery"),
        "lr": lambda r: f"{r.randint(1, 9)}e-{r.randint(3, 6)}",
        "lib": _v("numpy|pandas|torch|transformers|fastapi"),
        "ver": lambda r: f"{r.randint(1, 4)}.{r.randint(0, 19)}.{r.randint(1, 9)}",
        "score": _num(41, 97, "0.{}"),
        "ms": _num(12, 480, "{} ms"),
        "pct_a": lambda r: f"{r.randint(55, 69)}.{r.randint(1, 9)}%",
        "pct_b": lambda r: f"{r.randint(70, 92)}.{r.randint(1, 9)}%",
        "minutes": _num(7, 95, "{} minutes"),
        "steps": lambda r: f"{r.randrange(12000, 250000, 100):,} steps",
        "count": lambda r: f"{r.randint(1001, 9999):,}",
        "mem": _num(11, 79, "{} GB"),
        "lift": lambda r: f"+{r.randint(1, 9)}.{r.randint(1, 9)}%",
        "qps": lambda r: f"{r.randrange(12000, 98000, 50):,}",
        "quality": lambda r: f"{r.randint(5, 30)}.{r.randint(10, 99)}",
        "person": _pick("Dana |Priya |Tomasz |Aiko |Mateo |Ingrid |Kwame |Lucia |Hamid |Noor ",
                        "Whitfield|Okonkwo|Lindqvist|Marchetti|Tanaka|Oyelaran|Castellanos|Brennan|Haddad"),
        "service": _v("ingestion|billing|search-gateway|feature-store|export"),
        "project": _v("Bluefin|Marigold|Copperhead|Tidewater|Larkspur|Ironbark|Halcyon"),
        "path": _pick("/srv/data/", "clicks|sessions|labels|crawl", "/", "train|eval|dump", "_v",
                      "2|3|4|5|7", ".parquet"),
        "repo": _pick("ml-platform/|data-eng/|search/", "ranker|tokenizer|loader|scorer", "-", "core|v2|ng"),
        "channel": _pick("#", "pelican|walrus|otter|heron|lynx", "-", "ml|infra|evals"),
        "host": _pick("", "ash|birch|cedar|elm|maple", "-", "03|07|11|14|22", ".staging.internal"),
        "company": _v("Northwind Freight|Halvorsen Dairy|Bright Harbor Insurance|Kolibri Labs|Tessaract Mining"),
        "ckpt": _pick("", "ranger|sparrow|comet|basil", "-", "3b|7b|13b", "-sft", "2|3|4|6"),
    },
    "heldout": {
        "lang": _v("Swahili|Dutch|Hungarian|Indonesian|Czech|Thai|Tagalog|Romanian"),
        "plang": _v("Haskell|OCaml|Clojure|Zig|Nim|Crystal|F#"),
        "chars": _num(600, 1500, "{} characters", 50),
        "fmt": _v("CSV|XML|Parquet|JSON Lines|Excel sheets"),
        "datefmt": _v("MM-DD-YYYY|D MMM YYYY|YYYYMMDD"),
        "editor": _v("Emacs|Zed|Kakoune|IntelliJ IDEA"),
        "tz": _v("Lisbon time|Singapore time|Denver time|Nairobi time|Auckland time"),
        "case": _v("SCREAMING_SNAKE_CASE|Hungarian notation|lowerCamelCase|dot.case"),
        "analogy": _v("sailing|woodworking|basketball|astronomy|baking"),
        "browser": _v("Chromium|Opera|Edge|Arc"),
        "algo": _v("LightGBM|XGBoost|CatBoost|HDBSCAN|k-means|random forests|UMAP|t-SNE|logistic regression"),
        "db": _v("CockroachDB|Redis|Neo4j|MariaDB|Elasticsearch|ScyllaDB|SQL Server"),
        "region": _v("westeurope|eastus2|northeurope|japaneast|uksouth"),
        "tool": _v("Kestra|Argo Workflows|Flyte|Mage|Metaflow"),
        "date": lambda r: f"2025-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}",
        "model": _v("Phi-3 mini|Falcon 40B|OLMo 7B|DeepSeek-V2 Lite|Yi 34B|StableLM 2"),
        "opt": _v("RMSprop|Adagrad|Shampoo|Nesterov SGD|Adadelta"),
        "queue": _v("Amazon SQS|Pulsar|Redpanda|Beanstalkd|ZeroMQ"),
        "lr": _num(12, 99, "0.000{}"),
        "lib": _v("scikit-learn|polars|jax|pydantic|httpx"),
        "ver": lambda r: f"v0.{r.randint(2, 40)}.{r.randint(10, 30)}",
        "score": lambda r: f"{r.randint(55, 93)}.{r.randint(1, 9)}",
        "ms": _num(120, 950, "{} milliseconds"),
        "pct_a": lambda r: f"{r.randint(40, 59)}.{r.randint(1, 9)} percent",
        "pct_b": lambda r: f"{r.randint(60, 85)}.{r.randint(1, 9)} percent",
        "minutes": lambda r: f"{r.randint(1, 9)}h{r.randint(1, 59):02d}m",
        "steps": lambda r: f"{r.randint(18, 400)}k",
        "count": _num(101, 999, "{}"),
        "mem": _num(700, 3900, "{} MiB"),
        "lift": lambda r: f"{r.randint(1, 9)}.{r.randint(1, 9)} points",
        "qps": _num(2, 60, "{} thousand"),
        "quality": lambda r: f"{r.randint(18, 45)}.{r.randint(1, 9)} BLEU",
        "person": _pick("Soren |Adaeze |Yusuf |Marisol |Katarzyna |Bongani |Rhiannon |Tariq |Elif ",
                        "Abernathy|Nakagawa|Achterberg|Delacroix|Mbeki|Szabo|Quintero|Fairweather|Kowalczyk"),
        "service": _v("the auth proxy|telemetry|the scheduler|notifications|payments"),
        "project": _v("Nightjar|Saffron Gate|Quillfeather|Obsidian Fox|Moonwort|Glasswing"),
        "path": _pick("gs://", "orca|fjord|basalt|tundra", "-lake/raw/", "2023|2024|2025", "/q", "1|2|3|4", "/"),
        "repo": _pick("atlas|beacon|cinder|drift", "-", "monorepo|pipelines|serving"),
        "channel": _pick("", "kiwi|yak|ibis|newt", "-oncall@lists.example.org"),
        "host": _pick("stg-", "puffin|marten|gecko|bison", "0|1|2", "1|4|8", ".corp.example"),
        "company": _v("Vantablue Robotics|Ostara Foods|Peregrine Mutual|Lumenfield Energy|Caldera Shipping"),
        "ckpt": _pick("rc-", "tamarind|juniper|sorrel|quince", "-", "12|17|23|31|40"),
    },
}


def _templates(block: str) -> dict[str, list[tuple[str, str, list[str]]]]:
    """'kind | role | sentence | slot,slot' lines -> {kind: [(role, sentence, slots that must survive)]}."""
    out: dict[str, list] = {k: [] for k in KINDS}
    for line in block.strip().splitlines():
        kind, role, sentence, keys = (x.strip() for x in line.split("|"))
        out[kind].append((role, sentence, keys.split(",")))
    return out


# Fact templates, ten of each kind per family, each on its own subject (a conversation uses each at most
# once until all ten are used, so its facts do not overrule one another). Role: user, assistant or any.
TEMPLATES = {
    "dev": _templates("""
preference | user | I prefer answers in {lang}. | lang
preference | user | Please always give me code in {plang}. | plang
preference | user | Keep answers under {words}, please. | words
preference | user | I prefer {fmt} for anything tabular. | fmt
preference | user | Please write dates as {datefmt} in anything you give me. | datefmt
preference | user | I use {editor} every day, so please give me keybindings for it. | editor
preference | user | I prefer schedules written in {tz}. | tz
preference | user | Please name variables in {case} in any code you show me. | case
preference | user | I prefer explanations with {analogy} analogies when something is abstract. | analogy
preference | user | I test everything in {browser}, so please assume it in web examples. | browser
decision | user | We chose {algo} over {algo_alt} for the agent. | algo,algo_alt
decision | user | Let's go with {db} for the store, not {db_alt}. | db
decision | user | We decided to deploy on AWS in {region}. | region
decision | user | The team agreed to freeze the API on {date}. | date
decision | user | We're going with {queue} for the job queue. | queue
decision | assistant | I'd go with {tool} for the pipeline instead of {tool_alt}; the plan now uses it. | tool
decision | assistant | We're standardising on {model} as the base model, as agreed. | model
decision | assistant | On balance {opt} fits better than {opt_alt}, so I switched the optimiser. | opt,opt_alt
decision | assistant | I've pinned {lib} to {ver} to avoid the regression. | ver
decision | any | We settled on a learning rate of {lr}. | lr
result | any | The run scored {score} on the validation set. | score
result | any | Latency dropped to {ms} after the change. | ms
result | any | The A/B test gave a {lift} lift in click-through. | lift
result | assistant | Accuracy went from {pct_a} to {pct_b} with the new features. | pct_b
result | assistant | The index build took {minutes} on the full corpus. | minutes
result | assistant | Training converged after {steps}. | steps
result | assistant | Peak memory was {mem} during the last training run. | mem
result | assistant | Throughput reached {qps} requests per second at peak. | qps
result | user | The eval found {count} failing cases. | count
result | user | The perplexity came down to {quality} on the dev set. | quality
name | user | My colleague {person} owns the {service} service. | person
name | user | The project is called {project}. | project
name | user | Our dataset lives at {path}. | path
name | user | My manager {person} signs off on releases. | person
name | user | The staging server is {host}. | host
name | user | Our customer is {company}, so keep examples generic. | company
name | user | The checkpoint we ship is called {ckpt}. | ckpt
name | assistant | The main repo is {repo} on the internal GitLab. | repo
name | assistant | The on-call engineer this week is {person}. | person
name | any | Our team channel is {channel}. | channel
"""),
    "heldout": _templates("""
preference | user | From now on, {lang} only, please. | lang
preference | user | {plang} works best for me for any snippets. | plang
preference | user | Could you cap every reply at {chars}? | chars
preference | user | Whenever there's a table, hand it to me as {fmt}. | fmt
preference | user | Dates should look like {datefmt} in whatever you write for me. | datefmt
preference | user | My editor is {editor}, so tailor the shortcuts to that one. | editor
preference | user | Put meeting times in {tz}, that's where I am. | tz
preference | user | Identifiers in {case}, always. | case
preference | user | Analogies from {analogy} land best with me. | analogy
preference | user | Assume {browser} whenever a browser matters. | browser
decision | user | After a long debate the call is {algo}; {algo_alt} is off the table. | algo,algo_alt
decision | user | {db} wins for storage, final answer. | db
decision | user | Target platform is settled: Azure, {region}. | region
decision | user | Code freeze lands on {date}, no extensions. | date
decision | user | Job queue: {queue}, not up for discussion anymore. | queue
decision | assistant | My pick would be {tool}; {tool_alt} drops out and the workflows move over to it. | tool
decision | assistant | Base model is locked in as {model} now. | model
decision | assistant | Between the two, {opt} edges out {opt_alt}, so the recipe moves to it. | opt,opt_alt
decision | assistant | {lib} is held back at {ver} until the upstream fix ships. | ver
decision | any | Learning rate stays at {lr} for every run going forward. | lr
result | any | Final number on the holdout: {score} F1. | score
result | any | p95 is down to {ms} since the patch. | ms
result | any | Conversion moved by {lift} in the experiment. | lift
result | assistant | We're at {pct_b} now, up from {pct_a}. | pct_b
result | assistant | Rebuilding the whole index cost us {minutes}. | minutes
result | assistant | It stopped improving around step {steps}. | steps
result | assistant | The job topped out at {mem} of RAM. | mem
result | assistant | At peak we served {qps} queries a second. | qps
result | user | {count} cases still fail in the regression sweep. | count
result | user | Test-split score ended at {quality}. | quality
name | user | {person} is the one to ping about {service}. | person
name | user | Internally everyone refers to it as {project}. | project
name | user | Raw data sits under {path}. | path
name | user | Sign-off comes from {person}, our lead. | person
name | user | Staging runs on {host}. | host
name | user | The client here is {company}; keep their name out of any docs. | company
name | user | Whatever we deploy gets tagged {ckpt}. | ckpt
name | assistant | Code's in the {repo} repo, per the service catalogue. | repo
name | assistant | {person} has the pager until Friday. | person
name | any | Escalations go to {channel}. | channel
"""),
}
# Text put before a fact that follows other text in the same message, by family and role.
CONNECTORS = {
    "dev": {"user": _v("By the way, |Also, |Quick note: |One more thing: "),
            "assistant": _v("Separately, |For the record, |Also worth noting: ")},
    "heldout": {"user": _v("Oh, and |Side note: |Before I forget, |FYI, "),
                "assistant": _v("Unrelated, but |Status update: |In other news, ")},
}
# What the user says when the assistant's whole reply is a fact.
STATUS_PROMPTS = {
    "decision": _v("so what's the call?|what would you go with?|ok, which one do we pick?"),
    "result": _v("did the run finish?|any numbers yet?|how did the experiment go?"),
    "name": _v("who should I talk to about that?|do you know who handles that?|where does that live again?"),
}

QUESTIONS = _v("Can you explain {h}?|can you please tell me about {h} in {t}?|How does {h} work?|"
               "What should I know about {h}?|how about {h}?|I'm reading about {t}. What's the idea behind {h}?|"
               "Quick question: {h}, what's that about?|could you walk me through {h}|"
               "What does the knowledge base say about {h}?|Give me the short version of {h} please.|"
               "so um, {h}... how does that fit into {t}?|ok next topic: {h}. go")
FOLLOW_UPS = _v("Can you go deeper on that?|why is that?|Could you give an example?|what does that mean in practice?|"
                "and then what?|How does that relate to {h}?|what do you mean by {term}?|hmm, and {h}?|"
                "can you please expand on the last point")
REPEATS = _v("Sorry, can you explain {h} again?|wait, what was {h} again?|remind me how {h} works?|"
             "I think I asked before, but: {h}?|going back to {h} for a sec, can you summarise it?")
CHAT = _v("thanks|ok that makes sense|cool, thanks!|got it|nice, that helps|interesting.|ok|right, right|"
          "makes sense, thx|great")
GO_ON = _v("hmm, go on|go on|and?|keep going|ok, continue")
YES = _v("yes please|sure, go ahead|yes, the details would help|yeah|ok sure")
NO = _v("no, that's fine|nah, skip it|not now, thanks|no need")
OPENERS = ["", "", "", "Sure. ", "Good question. ", "In short: ", "Here's the gist. ", "OK. "]
AGAIN = _v("Sure, again: |As I said earlier: |No problem. |Once more, briefly: ")
OFFERS = _v("Do you want the details on {h}?|Should I go into {h} as well?|Want me to cover {h} next?|"
            "Would it help to look at {h} too?")
ACKS = _v("Noted.|Got it, I'll keep that in mind.|Thanks, noted.|Understood.|OK, good to know.")
WELCOME = _v("You're welcome!|Glad that helps.|Happy to help.|Sure thing.|No problem.")
SYSTEM = _v("You are a helpful assistant for a team that keeps its notes in a knowledge base. Answer from the "
            "knowledge base where you can and say when you are unsure.|You are an expert assistant. Use the "
            "team's knowledge base documents to answer questions accurately and concisely.|You help engineers "
            "understand the documents in their knowledge base. Prefer concrete explanations and examples.")

# Skills: (name, summary, steps, notes, example command).
SKILLS = [
    ('pdf-tools', 'Extract text, tables and page images from PDF files.',
     ['Check that the file opens and count its pages', 'Extract the text layer page by page',
      'If a page has no text layer, rasterise it and run OCR', 'Detect tables and export each one separately',
      'Write one output file per page, named by page number', 'Report pages that failed and why'],
     ['Encrypted PDFs need the password before anything else', 'Keep the original file untouched',
      'Large scans are slow: process them in batches'],
     'pdftotext -layout input.pdf out.txt'),
    ('sql-helper', 'Write, explain and optimise SQL queries against the project database.',
     ['Read the schema of the tables involved first', 'Write the query with explicit column lists',
      'Run EXPLAIN and look for full scans on large tables', 'Suggest an index only when a scan dominates',
      'Return the query, the plan summary and the expected row count'],
     ['Never run UPDATE or DELETE without a WHERE clause', 'Use parameters, never string formatting',
      'Quote identifiers that clash with keywords'],
     "sqlite3 app.db 'EXPLAIN QUERY PLAN SELECT 1'"),
    ('csv-cleaner', 'Normalise messy CSV exports before analysis.',
     ['Sniff the delimiter and the encoding', 'Strip whitespace around headers and cells',
      'Unify missing values to empty cells', 'Parse dates into ISO 8601', 'Drop exact duplicate rows',
      'Write the cleaned file next to the original with a suffix'],
     ['Keep leading zeros in identifiers: read them as text', 'Log every column whose type changed'],
     'python clean_csv.py raw.csv --out raw.clean.csv'),
    ('git-release', 'Cut a release: changelog, version bump, tag and notes.',
     ['Make sure the main branch is green', 'Collect merged changes since the last tag',
      'Group them into features, fixes and breaking changes', 'Bump the version number',
      'Create an annotated tag and push it', 'Publish the release notes'],
     ['Breaking changes go first in the notes', 'Never move a tag that was already pushed'],
     "git tag -a v1.4.0 -m 'release 1.4.0'"),
    ('plot-maker', 'Turn tabular results into clear charts.',
     ['Pick the chart type from the data: lines for trends, bars for comparisons', 'Label both axes with units',
      'Use a colour-blind safe palette', 'Add error bars when there are several seeds', 'Save as SVG and PNG'],
     ['One message per chart', 'Start bar charts at zero'],
     'python plot.py results.csv --x step --y reward'),
    ('api-tester', 'Exercise an HTTP API and report what breaks.',
     ['Read the endpoint list and their schemas', 'Send one valid request per endpoint',
      'Send malformed bodies and missing fields', 'Check status codes and error bodies',
      'Measure response times for each call', 'Summarise failures with the request that caused them'],
     ['Use a test account, never production credentials', 'Respect rate limits'],
     "curl -s -X POST localhost:8080/items -d '{}'"),
    ('log-triage', 'Find the cause of an incident in application logs.',
     ['Narrow the time window around the first alert', 'Group errors by message template',
      'Find the first occurrence of each group', 'Correlate with deploys and config changes',
      'Write a short timeline with the likely cause'],
     ['Correlation is not cause: say how sure you are', 'Quote log lines exactly'],
     "grep -c 'ERROR' app.log"),
    ('doc-writer', 'Draft and edit technical documentation.',
     ['Ask who the reader is and what they need to do', 'Outline the headings first',
      'Write the task steps before the background', 'Add one runnable example per task',
      'Cut sentences that do not help the reader act'],
     ['Prefer short sentences', 'Use the same term for the same thing throughout'],
     'mkdocs serve'),
]
# Extra sections some skills get (so that their length varies from a few hundred to about 2,000 characters).
SKILL_EXTRAS = {
    "## Inputs and outputs": _v(
        "Input: the file or request the user points at, plus any constraints they stated. Output: the result, "
        "a one-line summary of what was done, and anything that needs a human decision.|"
        "Read inputs only from the paths the user gives; write outputs next to them unless told otherwise, "
        "and never overwrite an existing file without asking.|"
        "Inputs can arrive as attachments, paths or pasted text. Normalise them to a working copy first, "
        "then report the location of every output you produce."),
    "## Troubleshooting": _v(
        "- If a step fails, stop, show the exact error and the command that produced it.\n"
        "- If the input is much larger than expected, process a sample first and ask before continuing.\n"
        "- If results look wrong, re-run the previous step on a tiny example you can check by hand.|"
        "- Missing tool: say which one and how to install it; do not improvise a replacement silently.\n"
        "- Permission errors: report the path, do not retry with elevated rights.\n"
        "- Timeouts: retry once with a smaller batch, then report.|"
        "- Encoding problems: detect the encoding instead of guessing, and keep the original bytes.\n"
        "- Partial output: say exactly which part is missing and why.\n"
        "- Conflicting instructions: ask which one wins before acting."),
    "## Checklist": _v(
        "- [ ] Inputs confirmed with the user\n- [ ] Dry run done on a sample\n- [ ] Output checked by eye\n"
        "- [ ] Summary written|"
        "- [ ] Nothing outside the working folder was touched\n- [ ] Every output file is listed\n"
        "- [ ] Open questions are stated at the end"),
}

