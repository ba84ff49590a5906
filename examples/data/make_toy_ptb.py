"""Writes ``toy_ptb.train.txt`` and ``toy_ptb.valid.txt``: a synthetic English-like corpus
in the Penn Treebank text format (one sentence per line, tokens separated by spaces, a
leading and a trailing space, numbers as ``N``), for the bucketing LSTM language model.

The sentences come from a small probabilistic grammar with number agreement, topical
word choice and nested clauses, so a language model has real structure to learn. Fixed
seed: rerunning gives the same files. No external text is used.

    python3 examples/data/make_toy_ptb.py
"""

import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))

TOPICS = {
    "farm": dict(
        noun=[
            "farmer",
            "cow",
            "horse",
            "dog",
            "barn",
            "field",
            "tractor",
            "goat",
            "sheep",
            "pig",
            "hen",
            "fence",
            "crop",
            "orchard",
            "shepherd",
            "mill",
        ],
        verb_t=[
            "feeds",
            "watches",
            "chases",
            "plows",
            "repairs",
            "sells",
            "buys",
            "follows",
            "guards",
            "waters",
            "milks",
            "harvests",
        ],
        adj=["muddy", "old", "quiet", "hungry", "red", "wooden", "wide", "green", "tired"],
    ),
    "city": dict(
        noun=[
            "driver",
            "bus",
            "train",
            "street",
            "market",
            "bank",
            "tower",
            "bridge",
            "office",
            "clerk",
            "mayor",
            "station",
            "cafe",
            "taxi",
            "lawyer",
            "tenant",
        ],
        verb_t=[
            "visits",
            "builds",
            "crosses",
            "closes",
            "opens",
            "funds",
            "rents",
            "paints",
            "reports",
            "manages",
            "inspects",
            "avoids",
        ],
        adj=["busy", "tall", "crowded", "modern", "noisy", "expensive", "narrow", "bright"],
    ),
    "sea": dict(
        noun=[
            "sailor",
            "ship",
            "harbor",
            "whale",
            "captain",
            "island",
            "wave",
            "net",
            "fisherman",
            "lighthouse",
            "storm",
            "anchor",
            "crew",
            "reef",
            "boat",
            "gull",
        ],
        verb_t=[
            "sails",
            "spots",
            "catches",
            "steers",
            "anchors",
            "loads",
            "signals",
            "tows",
            "follows",
            "repairs",
            "charts",
            "avoids",
        ],
        adj=["stormy", "salty", "deep", "blue", "distant", "calm", "cold", "rocky", "grey"],
    ),
    "market": dict(
        noun=[
            "company",
            "investor",
            "share",
            "price",
            "fund",
            "analyst",
            "trader",
            "bond",
            "profit",
            "bank",
            "dollar",
            "market",
            "rate",
            "index",
            "stock",
            "quarter",
        ],
        verb_t=[
            "raises",
            "cuts",
            "reports",
            "expects",
            "buys",
            "sells",
            "predicts",
            "lowers",
            "doubles",
            "tracks",
            "values",
            "announces",
        ],
        adj=["strong", "weak", "annual", "higher", "lower", "federal", "quarterly", "net"],
    ),
}
VERB_I = {
    "sg": ["sleeps", "waits", "falls", "rises", "works", "stops", "returns", "grows"],
    "pl": ["sleep", "wait", "fall", "rise", "work", "stop", "return", "grow"],
}
SAY = {
    "sg": ["says", "thinks", "believes", "reports", "hopes"],
    "pl": ["say", "think", "believe", "report", "hope"],
}
PREP = ["near", "behind", "under", "beside", "across", "toward", "inside", "past"]
ADV = ["yesterday", "today", "often", "later", "again", "early", "slowly", "suddenly"]
DET = {
    "sg": ["the", "a", "this", "every", "one"],
    "pl": ["the", "some", "these", "many", "N", "two", "few"],
}
NAMES = ["mr.", "ms."]
SURNAMES = ["smith", "jones", "brown", "miller", "davis", "garcia", "wilson", "moore"]


def plural(verb):
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "sses", "xes")):
        return verb[:-2]
    return verb[:-1]


def noun_plural(noun):
    if noun in ("sheep", "crew", "fish"):
        return noun
    if noun.endswith("man"):
        return noun[:-3] + "men"
    if noun.endswith(("s", "ch", "sh", "x")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


class Grammar:
    def __init__(self, rng):
        self.rng = rng

    def pick(self, items):
        return items[self.rng.randrange(len(items))]

    def noun_phrase(self, topic, depth):
        r = self.rng.random()
        if r < 0.1:
            return [self.pick(NAMES), self.pick(SURNAMES)], "sg"
        num = "sg" if self.rng.random() < 0.6 else "pl"
        words = [self.pick(DET[num])]
        if self.rng.random() < 0.4:
            words.append(self.pick(TOPICS[topic]["adj"]))
        noun = self.pick(TOPICS[topic]["noun"])
        words.append(noun if num == "sg" else noun_plural(noun))
        if depth < 2 and self.rng.random() < 0.2:
            words += [self.pick(PREP)] + self.noun_phrase(topic, depth + 1)[0]
        return words, num

    def verb_phrase(self, topic, num, depth):
        r = self.rng.random()
        if depth < 2 and r < 0.12:
            say = self.pick(SAY[num])
            return [say, "that"] + self.clause(topic, depth + 1)
        if r < 0.3:
            verb = self.pick(VERB_I[num])
            tail = [self.pick(ADV)] if self.rng.random() < 0.3 else []
            return [verb] + tail
        verb = self.pick(TOPICS[topic]["verb_t"])
        if num == "pl":
            verb = plural(verb)
        words = [verb] + self.noun_phrase(topic, depth)[0]
        if self.rng.random() < 0.15:
            words += [self.pick(PREP)] + self.noun_phrase(topic, depth + 1)[0]
        return words

    def clause(self, topic, depth=0):
        subject, num = self.noun_phrase(topic, depth)
        return subject + self.verb_phrase(topic, num, depth)

    def sentence(self):
        topic = self.pick(sorted(TOPICS))
        words = self.clause(topic)
        if self.rng.random() < 0.2:
            words = [self.pick(ADV), ","] + words
        if self.rng.random() < 0.2:
            words += [self.pick(["and", "but", "while"])] + self.clause(topic, 1)
        return words


def write(path, n, seed):
    grammar = Grammar(random.Random(seed))
    with open(path, "w") as f:
        for _ in range(n):
            f.write(" " + " ".join(grammar.sentence()) + " \n")


if __name__ == "__main__":
    write(os.path.join(HERE, "toy_ptb.train.txt"), 4000, seed=1)
    write(os.path.join(HERE, "toy_ptb.valid.txt"), 400, seed=2)
