"""English words that say nothing of what a note is about, for the statistical keyword extractor.

Three kinds, beyond the query stopwords (:data:`kb_indexer.search.terms.STOPWORDS`):

* :data:`LOW_CONTENT`: verbs any text uses (``add``, ``try``, ``keep``: every inflection, by rule, and the
  irregular forms), vague adjectives and adverbs (``fast``, ``enough``, ``back``), quantities, ordinals and
  general nouns (``thing``, ``bit``, ``minutes``). A word that is often a topic in some field is not here
  (``test``, ``return``, ``move``, ``set``, ``run``, ``build``, ``push``, ``pass``, ``base``, ``key``, ``deep``).
* :data:`VERB_BEFORE` / :data:`OBJECT_AFTER` / :data:`NOUN_BEFORE`: the neighbours that tell a verb from a noun
  (``it adds``, ``add the salt``, ``the salt``), for a verb the list does not know (``empowers``).

A small knowledge base gives document frequency no say (a word on one note of 18 looks rare), so these
lists are what keeps ``adds`` and ``fast`` off a note on salt in bread.
"""

from __future__ import annotations

_VERBS = """
accept achieve add admit agree aim allow appear argue arrive ask assume attempt avoid become begin believe belong
bother bring care carry cause change check choose claim close come concern consider contain continue create decide deliver
depend deserve describe determine discover do enable end enjoy ensure exist expect explain face fail feel finish
follow forget get give go guess happen hate have hear help hope imagine improve include increase indicate involve
keep know last lead leave let like look lose love make manage matter mean meet mention miss need notice obtain
occur offer open own perform plan prefer prepare present pretend produce promise prove provide put reach realise
realize receive recommend reduce refer remain remember repeat require result say see seem send show speak spend
stand start stay stop suggest suppose take talk tell tend thank think try turn understand use vary wait want
watch wish wonder work worry
"""
_IRREGULAR = """
am is are was were been being did does done doing went gone goes got gotten gave given took taken made came
brought thought told said knew known seen saw felt found kept left lost meant met put sent shown stood
understood led chose chosen began begun became ran
"""
_ADJECTIVES_ADVERBS = """
able absolutely actual actually afterward afterwards ahead alone already altogether anyhow anymore anyway
anywhere apart around away back bad badly barely basic basically best better big bigger biggest brief briefly
certain certainly cheap cheaper cheapest clear clearly common commonly complete completely correct correctly
current currently different directly early earlier easier easiest easily easy else elsewhere enough entire
entirely especially essentially eventually ever everywhere exact exactly extra extremely fairly far fast faster
fastest fine finally first former forward fully further general generally good great greater greatest greatly hard harder
hardest hardly here high higher highest huge
ideal immediately indeed instead interesting just kind largely last late later latest likely little long longer
large larger largest lot lots low lower lowest main mainly major many maybe merely minor mostly much nearby nearly neat
new newer nice normally nowhere
obvious obviously often okay old older once ongoing otherwise perfect perfectly perhaps plain plenty poor
possible possibly pretty previous previously probably proper properly quick quicker quickly quite rarely rather
ready real really recent recently regular right roughly same several short shorter simple simply slight slightly slow
slower slowly small smaller smallest sometimes somewhat somewhere soon special specific specifically still straight
strong stronger strongly sure surely together tiny total totally
truly twice typical typically unlike usual usually various very well whole wrong yet
"""
_NOUNS = """
amount bit bits case cases day days end ends example examples fact hour hours idea ideas kind kinds lot minute
minutes moment month months number part parts piece pieces place reason reasons side sort sorts stuff thing
things time times tip tips today tomorrow week weeks way ways year years yesterday
anybody anyone anything everybody everyone everything nobody nothing somebody someone something
zero one two three four five six seven eight nine ten eleven twelve twenty hundred thousand million
second third fourth fifth sixth seventh eighth ninth tenth half
"""


def inflections(verb: str) -> set[str]:
    """A verb and its -s, -ed and -ing forms by the regular rules (a form that is not a word never occurs)."""
    out = {verb}
    if verb.endswith("e"):
        out |= {verb + "s", verb + "d", verb[:-1] + "ing"}
    elif verb.endswith("y") and verb[-2:-1] not in ("a", "e", "o", "u"):
        out |= {verb[:-1] + "ies", verb[:-1] + "ied", verb + "ing"}
    elif verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        out |= {verb + "es", verb + "ed", verb + "ing"}
    else:
        out |= {verb + "s", verb + "ed", verb + "ing"}
        if len(verb) <= 4 and verb[-1] not in "aeiouwxy" and verb[-2] in "aeiou" and verb[-3:-2] not in "aeiou":
            out |= {verb + verb[-1] + "ed", verb + verb[-1] + "ing"}   # stop: stopped, stopping
    return out


LOW_CONTENT = frozenset({form for v in _VERBS.split() for form in inflections(v)} | set(_IRREGULAR.split())
                        | set(_ADJECTIVES_ADVERBS.split()) | set(_NOUNS.split()))

# A word right after one of these is a verb ("it adds", "we feed", "to tighten", "don't add", "then add");
# right before one of these is a verb with its object ("add the salt", "feed it").
VERB_BEFORE = frozenset("""
i you we they he she it who which can could will would should must may might shall cannot can't won't don't
doesn't didn't to then please
""".split())
OBJECT_AFTER = frozenset("the a an it them this these those my your our their its his her him me us".split())
# A word right after one of these is a noun ("the salt", "of flour", "two bakes").
NOUN_BEFORE = frozenset("""
the a an this these those my your our their its his her each every no another some any of per
""".split())
