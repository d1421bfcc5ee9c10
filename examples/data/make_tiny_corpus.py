"""Regenerate `tiny_corpus.txt`, the training text of `examples/char_transformer.py`.

The text is original: it is assembled from the sentence templates and word lists
below (all written for ember), with a seeded `random.Random`, so running this
script reproduces the shipped file byte for byte.  It mixes six kinds of
writing -- descriptions of places, dialogues, short essays, letters, recipes and
a weather diary -- so a character model has spelling, punctuation, names,
recurring phrases and document structure to learn.  Dedicated to the public
domain (CC0 1.0); see README.md in this folder.

Run:   python examples/data/make_tiny_corpus.py            # writes tiny_corpus.txt here
"""
from __future__ import annotations

import pathlib
import random
import sys

TOWNS = ["Ashford", "Bramblewick", "Coldwater", "Dunmore", "Elderby", "Fennick", "Greyhollow",
         "Harrowgate", "Ivybridge", "Juniper Cross", "Kettlewell", "Larkspur", "Millbrook",
         "Northwold", "Oakhaven", "Pebbleford", "Quillon", "Rushmere", "Saltmarsh", "Thornbury"]
PEOPLE = ["Ada", "Bram", "Clara", "Dorian", "Edith", "Felix", "Greta", "Hugo", "Iris", "Jonas",
          "Kira", "Leo", "Mara", "Nils", "Olive", "Pavel", "Rosa", "Silas", "Tess", "Viktor"]
TRADES = ["baker", "blacksmith", "weaver", "clockmaker", "ferryman", "potter", "librarian",
          "beekeeper", "carpenter", "lamplighter", "miller", "cartographer", "glassblower",
          "shepherd", "bookbinder", "gardener"]
WHERE = ["at the bend of a slow brown river", "on a ridge above the northern moor",
         "where two old roads cross", "in a valley full of apple trees",
         "on the edge of a salt marsh", "beside a lake that freezes every winter",
         "under a long grey cliff", "among low green hills", "at the mouth of a narrow harbour",
         "in the shadow of a ruined tower"]
MATERIALS = ["red brick", "grey stone", "pale timber", "river clay", "dark slate", "white chalk"]
FEATURES = ["the market square", "the old mill", "the stone bridge", "the chapel bell",
            "the harbour wall", "the orchard", "the clock tower", "the village green",
            "the old well", "the long meadow"]
SEASONS = ["spring", "summer", "autumn", "winter"]
SEASON_SCENES = {
    "spring": ["the hedges fill with blossom", "lambs call from the high fields",
               "the river runs fast and cold", "children race paper boats down the ditches"],
    "summer": ["the streets smell of cut grass and bread", "the swallows nest under every roof",
               "the evenings stay light until late", "the fields turn gold and dry"],
    "autumn": ["the orchards are heavy with fruit", "smoke rises from every chimney",
               "the leaves gather in red drifts", "the fog lies low over the water"],
    "winter": ["the roofs are white with frost", "the lamps are lit before four o'clock",
               "the pond freezes hard enough to skate on", "the wind rattles every shutter"],
}
ADJ = ["quiet", "busy", "small", "old", "windy", "crooked", "cheerful", "sleepy", "proud", "gentle"]
OBJECTS = ["a brass lantern", "a wooden spoon", "a map of the coast", "a basket of pears",
           "a blue umbrella", "an old key", "a loaf of rye bread", "a jar of honey",
           "a letter with no stamp", "a pocket watch", "a ball of wool", "a box of candles"]
PLACES = ["the bakery", "the ferry landing", "the library", "the market", "the bridge",
          "the inn", "the station", "the harbour", "the orchard", "the post office"]
TIMES = ["at dawn", "before noon", "after lunch", "in the evening", "at midnight", "tomorrow",
         "on Sunday", "next week"]
WEATHER = ["clear and cold", "grey with light rain", "bright and warm", "windy from the west",
           "foggy until noon", "stormy after dark", "mild and still", "wet and blustery",
           "dry with high cloud", "frosty at first, then sunny"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
DISHES = [("barley soup", ["barley", "onions", "carrots", "thyme", "salt"]),
          ("pea soup", ["dried peas", "onions", "celery", "a bay leaf", "pepper"]),
          ("bean stew", ["white beans", "tomatoes", "garlic", "olive oil", "rosemary"]),
          ("apple cake", ["apples", "flour", "butter", "sugar", "eggs"]),
          ("pear tart", ["pears", "flour", "butter", "sugar", "an egg"]),
          ("oat biscuits", ["oats", "flour", "butter", "honey"]),
          ("honey loaf", ["walnuts", "flour", "butter", "honey", "milk"]),
          ("plum jam", ["ripe plums", "sugar", "lemon juice"]),
          ("blackberry jam", ["blackberries", "sugar", "lemon juice"])]
NUMBERS = ["two", "three", "four", "five", "six", "ten", "twenty"]

ESSAYS = {
    "rivers": [
        "A river is never the same river twice, yet the town beside it treats it like an old friend.",
        "It carries the rain of distant hills past doors that have never seen those hills.",
        "In dry years it shrinks to a thread, and people walk across it and forget how wide it was.",
        "In wet years it climbs the steps of the mill and reminds everyone who was there first.",
        "The ferryman says the river has moods, and that the trick is to listen before you row.",
        "Every bridge is a small argument with the water, and the water is patient.",
    ],
    "bread": [
        "Bread is the slowest fast food in the world.",
        "Flour, water, salt and time are all it asks, and time is the ingredient most often missing.",
        "The baker rises before the town so that the town can rise to the smell of her work.",
        "A good loaf sings as it cools; the crust cracks with a sound like distant rain.",
        "Nobody remembers the bread they ate last Tuesday, and yet every meal leans on it.",
        "To share bread with someone was once a promise, and in small towns it still is.",
    ],
    "clocks": [
        "The clock in the tower has been wrong for eleven years, and nobody minds.",
        "People set their days by the bell rather than by the hands, and the bell is always early.",
        "A clockmaker once said that a clock does not measure time, it only counts it.",
        "Small gears turn large gears, and the largest gear moves so slowly that it seems asleep.",
        "When the clock stops, the town notices the silence before it notices the hour.",
        "To repair a clock you must first learn how it fails, which is a lesson for most things.",
    ],
    "maps": [
        "Every map is a list of things someone decided to leave out.",
        "The old maps of the coast show sea monsters where the new ones show depths in fathoms.",
        "A cartographer walks slowly, counting steps, and trusts her feet more than her eyes.",
        "Roads on a map look certain, but anyone who has walked them knows how they wander.",
        "The best map is the one that gets you home, even if it gets everything else wrong.",
        "Children draw maps of their streets with the sweet shop in the middle, and they are right.",
    ],
    "bees": [
        "A hive is a city without a mayor, and it runs better than most cities with one.",
        "The beekeeper moves slowly and speaks softly, because the bees are always listening.",
        "In spring the bees visit the orchards, and in autumn the town eats the results.",
        "Honey keeps for years, which is more than can be said for most promises.",
        "Each bee makes a spoonful of honey in its whole life, so every jar is a crowd's work.",
        "When the bees are calm, the weather will hold; when they are cross, bring the washing in.",
    ],
    "lamps": [
        "Before the wires came, the lamplighter walked the streets each evening with a long pole.",
        "He lit the lamps from the harbour to the hill, and the town followed him like a tide.",
        "A lit window is an invitation, even when nobody means it as one.",
        "In the fog the lamps become soft yellow moons, each with its own small weather.",
        "The oldest lamp in town still burns oil, because the innkeeper refuses to change it.",
        "Light is cheap now, and so we have forgotten how much the dark used to cost.",
    ],
}
ESSAY_OPENERS = ["On {topic}.", "A few words about {topic}.", "Notes on {topic}.", "Concerning {topic}."]
ESSAY_CLOSERS = ["That, at least, is how it seems from {town}.",
                 "Or so they say in {town}, and they have had time to think about it.",
                 "Ask anyone in {town} and they will tell you the same, at length.",
                 "It is a small thought, but small thoughts are the ones that last."]

DIALOGUES = [
    [("{a}", "Have you seen {obj}? I left it by {place} {time0}."),
     ("{b}", "I saw one like it, but it belonged to the {trade}."),
     ("{a}", "Then I must have left mine somewhere else."),
     ("{b}", "Try {place2}. Everything lost in this town ends up there sooner or later.")],
    [("{a}", "What will the weather be like {time}?"),
     ("{b}", "{weather_cap}, if the old {trade} is to be believed."),
     ("{a}", "And is the old {trade} usually right?"),
     ("{b}", "About the weather, always. About everything else, never.")],
    [("{a}", "Why are you carrying {obj}?"),
     ("{b}", "Because the {trade} asked me to bring it to {place} {time}."),
     ("{a}", "That is a strange errand."),
     ("{b}", "In {town}, every errand is strange if you look at it closely.")],
    [("{a}", "I am thinking of leaving {town}."),
     ("{b}", "Where would you go?"),
     ("{a}", "Somewhere {adj}, where nobody knows my name."),
     ("{b}", "You would be back within a week. You would miss {feature}."),
     ("{a}", "Perhaps. But I would like to find out.")],
    [("{a}", "Can you help me carry these boxes to {place}?"),
     ("{b}", "How many are there?"),
     ("{a}", "Only {num}."),
     ("{b}", "You said that last time, and there were {num2}."),
     ("{a}", "Last time I was counting differently.")],
    [("{a}", "Is it true that the {trade} is leaving {town}?"),
     ("{b}", "Only for the {season}. She will be back when {scene}."),
     ("{a}", "Who will do her work while she is gone?"),
     ("{b}", "Nobody. We shall simply have to wait, as we always do.")],
]

LETTER_BODIES = [
    "I am writing from {town}, where {scene}. The {trade} sends his regards and asks whether you "
    "still have {obj}.",
    "The journey was longer than we planned. We stopped at {town2}, which is {adj} and smaller than "
    "I remembered, and we slept at the inn by {feature}.",
    "Things here are much as you left them. {feature_cap} still needs repair, and the {trade} still "
    "promises to fix it {time}.",
    "I found {obj} in the attic and thought of you at once. I will bring it when I come to visit "
    "in the {season}.",
    "The weather has been {weather} all week, so I have stayed indoors and read three books, two of "
    "them twice.",
]
LETTER_ENDS = ["Write soon.", "Give my love to everyone.", "Keep warm.", "Do not forget me.",
               "Until the {season}."]
LETTER_SIGNS = ["Yours,", "With love,", "Ever yours,", "Your friend,", "Warmly,"]

RECIPE_STEPS = {
    "soup": ["Rinse the {i0} and leave them to soak overnight.", "Chop the {i1} and the {i2}.",
             "Warm a little butter in a heavy pot and soften the vegetables.",
             "Add the {i0} and cover with water.", "Simmer gently for an hour, stirring now and then.",
             "Season with {i4} and serve with bread."],
    "bake": ["Heat the oven until it is hot but not fierce.", "Rub the {i2} into the {i1}.",
             "Stir in the {i0} and then the {i3}.", "Press the mixture into a greased tin.",
             "Bake until golden, about forty minutes.", "Leave it to cool before you cut it."],
    "pot": ["Put the {i0} in a wide pan.", "Add the {i1} and the {i2}.",
            "Cook slowly over a low flame until thick.", "Taste, and add more {i1} if it needs it.",
            "Spoon it into clean jars while it is still warm."],
}
RECIPE_KIND = {"barley soup": "soup", "pea soup": "soup", "bean stew": "soup", "apple cake": "bake",
               "pear tart": "bake", "oat biscuits": "bake", "honey loaf": "bake", "plum jam": "pot",
               "blackberry jam": "pot"}


def cap(s: str) -> str:
    return s[0].upper() + s[1:]


def fill(r: random.Random, template: str, **fixed) -> str:
    season = fixed.get("season", r.choice(SEASONS))
    vals = dict(town=r.choice(TOWNS), town2=r.choice(TOWNS), trade=r.choice(TRADES),
                obj=r.choice(OBJECTS), place=r.choice(PLACES), place2=r.choice(PLACES),
                time=r.choice(TIMES), time0=r.choice(TIMES), weather=r.choice(WEATHER),
                adj=r.choice(ADJ), feature=r.choice(FEATURES), season=season,
                scene=r.choice(SEASON_SCENES[season]), num=r.choice(NUMBERS[:3]),
                num2=r.choice(NUMBERS[3:]))
    vals.update(fixed)
    vals["weather_cap"] = cap(vals["weather"])
    vals["feature_cap"] = cap(vals["feature"])
    return template.format(**vals)


def place_description(r: random.Random) -> str:
    town = r.choice(TOWNS)
    season = r.choice(SEASONS)
    lines = [f"{town}.",
             f"The {r.choice(ADJ)} town of {town} lies {r.choice(WHERE)}. Its houses are built of "
             f"{r.choice(MATERIALS)}, and most of them lean a little towards {r.choice(FEATURES)}.",
             f"In {season}, {r.choice(SEASON_SCENES[season])}, and {r.choice(SEASON_SCENES[season])}.",
             f"The {r.choice(TRADES)} and the {r.choice(TRADES)} are the best known people in town, "
             f"though the {r.choice(TRADES)} would tell you otherwise."]
    if r.random() < 0.6:
        lines.append(f"Visitors are told to see {r.choice(FEATURES)} {r.choice(TIMES)} and to "
                     f"buy {r.choice(OBJECTS)} before they leave.")
    return "\n".join(lines)


def dialogue(r: random.Random) -> str:
    a, b = r.sample(PEOPLE, 2)
    season = r.choice(SEASONS)
    script = r.choice(DIALOGUES)
    fixed = dict(town=r.choice(TOWNS), trade=r.choice(TRADES), obj=r.choice(OBJECTS),
                 place=r.choice(PLACES), time=r.choice(TIMES), season=season)
    lines = [f"{fill(r, who, a=a, b=b)}: {fill(r, text, **fixed)}" for who, text in script]
    return "\n".join(lines)


def essay(r: random.Random) -> str:
    topic = r.choice(sorted(ESSAYS))
    body = ESSAYS[topic][:]
    r.shuffle(body)
    body = body[:r.randint(3, 5)]
    head = fill(r, r.choice(ESSAY_OPENERS), topic=topic)
    return head + "\n" + " ".join(body) + " " + fill(r, r.choice(ESSAY_CLOSERS))


def letter(r: random.Random) -> str:
    to, frm = r.sample(PEOPLE, 2)
    season = r.choice(SEASONS)
    bodies = r.sample(LETTER_BODIES, 2)
    text = [f"Dear {to},"] + [fill(r, b, season=season) for b in bodies]
    text.append(fill(r, r.choice(LETTER_ENDS), season=season))
    text += [r.choice(LETTER_SIGNS), frm]
    return "\n".join(text)


def recipe(r: random.Random) -> str:
    name, ingredients = r.choice(DISHES)
    steps = RECIPE_STEPS[RECIPE_KIND[name]]
    ing = ingredients + ["salt"] * (5 - len(ingredients))
    out = [f"How to make {name}.", "You will need " + ", ".join(ingredients[:-1]) + " and "
           + ingredients[-1] + "."]
    for i, s in enumerate(steps, 1):
        out.append(f"{i}. " + s.format(**{f"i{k}": ing[k] for k in range(5)}))
    return "\n".join(out)


def diary(r: random.Random) -> str:
    start = r.randrange(7)
    town = r.choice(TOWNS)
    out = [f"Weather diary, {town}."]
    for k in range(r.randint(3, 5)):
        day = DAYS[(start + k) % 7]
        out.append(f"{day}: {r.choice(WEATHER)}. {cap(r.choice(SEASON_SCENES[r.choice(SEASONS)]))}.")
    return "\n".join(out)


def build(target_bytes: int = 48_000, seed: int = 2024) -> str:
    r = random.Random(seed)
    makers = [place_description, dialogue, essay, letter, recipe, diary]
    pieces, size = [], 0
    while size < target_bytes:
        p = r.choice(makers)(r)
        pieces.append(p)
        size += len(p) + 2
    return "\n\n".join(pieces) + "\n"


if __name__ == "__main__":
    out = pathlib.Path(__file__).with_name("tiny_corpus.txt")
    text = build()
    out.write_text(text, encoding="ascii")
    print(f"wrote {out} ({len(text):,} characters)", file=sys.stderr)
