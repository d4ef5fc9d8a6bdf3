"""The closed word classes the stance parser reads (:mod:`.stance`).

Everything here is English grammar and a few conventions of engineering prose: which verbs
adopt, reject, require or merely try something, which words mark an environment or a region,
which nouns say nothing about a purpose. No list of products or tools is needed to parse a
statement; :data:`ALIASES` only folds a handful of common spellings of one thing together.
"""

from __future__ import annotations

import re


def word_set(text: str) -> frozenset[str]:
    """The words of ``text`` (one per whitespace-separated token)."""
    return frozenset(text.split())


def _words_in_order(text: str) -> list[str]:
    return text.split()


def _phrases(text: str) -> tuple[str, ...]:
    """Comma-separated phrases, longest first (so "go with" wins over "go")."""
    found = {p.strip() for p in text.replace("\n", " ").split(",") if p.strip()}
    return tuple(sorted(found, key=lambda p: (-len(p.split()), p)))


#: What a statement says about its option.
ADOPT, REQUIRE, ALLOW, OPTIONAL, REJECT, TRIAL = (
    "adopt",
    "require",
    "allow",
    "optional",
    "reject",
    "trial",
)

#: Verbs whose object is the option chosen ("Use X for P", "Keep logs for 30 days").
CHOICE_VERBS = _phrases(
    """
    use, uses, using, adopt, choose, pick, select, prefer, favour, favor, standardise on,
    standardize on, standardise, standardize, consolidate on, converge on, settle on, go with,
    go for, opt for, switch to, migrate to, move to, transition to, upgrade to, port to,
    keep, keep using, retain, stick with, stay on, stay with, remain on, continue using,
    continue to use, rely on, depend on, commit to, enable, turn on, switch on, introduce,
    roll out, employ, leverage, utilise, utilize, embrace, bet on, default to, build on,
    base on, make use of, start using, begin using
    """
)
#: Verbs that reject their object ("Avoid X", "Drop X", "Stop using X").
REJECT_VERBS = _phrases(
    """
    avoid, avoid using, ban, forbid, prohibit, disallow, drop, remove, retire, deprecate,
    sunset, decommission, abandon, reject, disable, turn off, switch off, eliminate,
    phase out, get rid of, move away from, migrate away from, migrate off, move off,
    stop using, stop, discontinue, cancel, kill, freeze, block, exclude, veto, scrap,
    do away with, no longer use, cease, halt, pause, shut down, end, sunset, wind down
    """
)
#: Verbs that make their object mandatory ("Require MFA for admin accounts").
REQUIRE_VERBS = _phrases("require, enforce, mandate, always use, insist on, need")
#: Verbs that permit without choosing ("Allow deploys on Fridays").
ALLOW_VERBS = _phrases("allow, permit, accept, tolerate, support, let")
#: Verbs that commit to nothing yet: a pilot contradicts no decision.
TRIAL_VERBS = _phrases(
    """
    pilot, trial, evaluate, try, try out, experiment with, prototype, explore, investigate,
    consider, spike, assess, benchmark, research, look into, review, test drive, poc
    """
)
#: Verbs that move an event in time ("Delay the launch to Q4"): the object is the action.
RESCHEDULE_VERBS = _phrases(
    "delay, postpone, defer, push back, push out, reschedule, bring forward, pull in, slip"
)
#: Verbs that only set a value ("Lower the rate limit to 300 requests per minute"), and other
#: words that say nothing about *what* a value is for; a policy is what remains.
VALUE_VERBS = word_set(
    """
    set change lower raise increase decrease reduce cut bump extend shorten update adjust cap
    limit tighten relax double halve make keep must may can should shall will need needs is are
    be been being stay stays remain remains become becomes
    """
)
#: Verbs that replace one option with another ("Replace Y with X").
REPLACE_VERBS = _phrases("replace, swap, substitute, supplant")
#: Verbs whose instrument or destination is the option: "Write the service in Go", "Deploy
#: all services on Kubernetes". Grouped into a class, so "deploy"/"run"/"host" on Kubernetes
#: speak of the same purpose.
INSTRUMENT_CLASSES = {
    "run": "run deploy host serve operate ship containerise containerize orchestrate schedule",
    "write": "write rewrite implement build develop code program author script",
    "manage": "manage provision define describe codify declare configure automate",
    "store": "store persist save put keep hold",
    "send": "send publish route stream emit queue push dispatch deliver transport",
    "backup": "back backup archive snapshot replicate mirror export copy sync",
    "cache": "cache memoise memoize",
    "track": "track monitor observe trace log alert collect measure record report",
    "test": "test lint check validate verify format",
    "authenticate": "authenticate authorise authorize sign secure encrypt",
}
#: Classes whose verb only says the option is *used* for the object: "Deploy all services on
#: Kubernetes" and "Use ECS for all services" speak of one purpose. The other classes name a
#: narrower role ("Back up the ledger to S3" does not choose the ledger's database) and meet
#: a verbless purpose only when it names the role ("for ledger backups").
LIGHT_CLASSES = frozenset({"run", "write", "manage", "store", "send"})
INSTRUMENT_VERBS = {v: cls for cls, verbs in INSTRUMENT_CLASSES.items() for v in verbs.split()}
#: Nouns that name what an instrument class does: "for session storage" is what "Store
#: sessions in X" says with a verb, "for infrastructure provisioning" what "Provision ...".
CLASS_NOUNS = {
    "run": "runtime hosting deployment deployments compute execution",
    "write": "implementation development language languages programming",
    "manage": "management provisioning configuration automation",
    "store": "storage database databases datastore persistence",
    "backup": "backups backup archive archival replication snapshots disaster recovery",
    "cache": "caching cache",
    "send": "messaging delivery transport streaming publishing routing queueing queuing",
    "track": "monitoring observability tracing logging alerting telemetry metrics reporting",
    "test": "testing tests linting formatting validation verification",
    "authenticate": "authentication authorisation authorization login sso encryption",
}
#: Prepositions that introduce an instrument or destination after an instrument verb.
INSTRUMENT_PREPS = word_set("with using via through on onto in into to behind by atop")
#: Instruments that need no capital to be read as one ("with pytest", "using uv").
LOOSE_INSTRUMENT_PREPS = word_set("with using via through")

#: Lead-ins that say nothing ("We will", "Going forward,", "Decision:").
FILLER = _phrases(
    """
    we will, we'll, we shall, we should, we must, we, we are going to, we're going to,
    we decided to, we have decided to, we've decided to, decided to, decide to, let's, let us,
    the team will, the team should, teams should, teams must, all teams must, all teams should,
    everyone should, everyone must, going forward, from now on, henceforth, by default,
    decision, adr, proposal, i will, i'll, please, to, must, should, shall, will, can, may,
    officially, henceforth we will, moving forward, for now, for the time being,
    plan to, aim to, intend to, agree to, we agree to
    """
)
#: Lead-ins that negate what follows ("Do not use X", "Never deploy on Fridays").
NEGATIONS = _phrases(
    """
    do not, don't, dont, never, must not, mustn't, should not, shouldn't, will not, won't,
    shall not, cannot, can't, can not, no longer, not, no more, we will not, we won't,
    we do not, we don't, we never, we must not, we should not
    """
)
#: Predicates after a subject ("X is not allowed", "MFA is optional for admins").
PREDICATE_MODES = (
    (r"(?:not|no longer) (?:allowed|permitted|approved|accepted|supported|used|an option)", REJECT),
    (r"(?:not|no longer) (?:required|mandatory|compulsory|enforced|needed)", OPTIONAL),
    (
        r"(?:banned|forbidden|prohibited|disallowed|deprecated|discouraged|retired|off limits|"
        r"off-limits|out|dropped|removed|disabled|rejected|not to be used|to be avoided|"
        r"being phased out|phased out|sunset|decommissioned|unsupported|frozen|paused)",
        REJECT,
    ),
    (r"(?:required|mandatory|compulsory|enforced|obligatory|a must|non-negotiable)", REQUIRE),
    (r"(?:optional|voluntary|opt-in|at the team's discretion|up to each team)", OPTIONAL),
    (r"(?:allowed|permitted|acceptable|fine|ok|okay)", ALLOW),
    (
        r"(?:enabled|approved|preferred|the standard|our standard|the default|"
        r"standard|recommended|adopted|chosen|in use|kept|retained)",
        ADOPT,
    ),
)
#: Copulas between a subject and its predicate.
COPULA = (
    r"(?:is|are|will be|shall be|must be|should be|remains|remain|stays|stay|becomes|"
    r"become|will remain|will stay|will become|gets|get|has been|have been)"
)
#: Verbs of a subject-first statement whose complement is the option ("Events go to Kafka").
SUBJECT_VERBS = (
    r"(?:go|goes|run|runs|live|lives|sit|sits|flow|flows|move|moves|land|lands|belong|belongs|"
    r"stay|stays|remain|remains|will go|will run|will live|should go|should run|must go|"
    r"must run)"
)

#: Prepositions that end an object and start a modifier.
PREPOSITIONS = word_set(
    "for as in on at to with using via through across within over from into onto by under "
    "behind after before until till during per every each without except versus vs vs. "
    "instead rather beside besides alongside atop throughout"
)
#: Multiword prepositions naming the rejected alternative ("X instead of Y").
ALTERNATIVE_PREPS = _phrases(
    "instead of, rather than, in place of, in favour of, in favor of, over, not, versus, vs, "
    "vs., as opposed to, as a replacement for, and not, but not"
)
#: Reasons and asides end the statement proper: "Use X because ...".
REASON = re.compile(
    r"\b(?:because|since|due to|given|so that|so we|in order to|which|thanks to|owing to|"
    r"as (?:it|they|we|this|that|there|these|those|its|our|you|he|she|per)|where|while|"
    r"whereas|unless|if|to avoid|to prevent|to reduce|based on|per (?:the|our)|"
    r"after (?:the|we|an?|our|it)|following (?:the|an?|our))\b|[(\[]|--|\u2014|\u2013| - ",
    re.IGNORECASE,
)

#: Determiners and quantifiers stripped from the front of a name.
DETERMINERS = word_set(
    "the a an our their its this that these those all every any each some both single "
    "new existing current same whole entire only own"
)
#: Nouns that name no particular purpose: "the primary datastore" = "the datastore".
GENERIC = word_set(
    """
    primary main default standard preferred official sole only single canonical core central
    system systems platform platforms layer layers solution solutions tool tools tooling stack
    technology technologies option options choice choices thing things setup approach
    everything anything stuff purpose purposes use usage need needs going forward now
    team teams engineer engineers developer developers everyone everybody anyone anybody
    we us company org organisation
    organization across wide company-wide org-wide whole entire
    """
)
#: Head nouns dropped from the end of a multiword option name ("EC2 VMs" = "EC2").
OPTION_TAILS = word_set(
    """
    database databases db dbs cluster clusters server servers instance instances engine
    vm vms machine machines node nodes service cloud language framework library lib libs
    package sdk tool tooling platform stack broker queue bus
    """
)
#: Vendor prefixes dropped from the front of a multiword option ("Apache Kafka" = "Kafka").
VENDORS = word_set("apache amazon aws google gcp microsoft azure hashicorp elastic confluent")
#: Spellings of the same thing (a convenience: the parse never needs a tool to be listed).
ALIASES = {
    "postgres": "postgresql",
    "pg": "postgresql",
    "psql": "postgresql",
    "pgsql": "postgresql",
    "k8s": "kubernetes",
    "kube": "kubernetes",
    "mongo": "mongodb",
    "golang": "go",
    "js": "javascript",
    "ts": "typescript",
    "node": "node.js",
    "nodejs": "node.js",
    "rabbit": "rabbitmq",
    "mssql": "sql server",
    "py": "python",
    "gha": "github actions",
    "gh actions": "github actions",
    "es": "elasticsearch",
    "elastic search": "elasticsearch",
    "dynamo": "dynamodb",
    "tf": "terraform",
    "mfa": "mfa",
    "2fa": "mfa",
    "two-factor authentication": "mfa",
    "multi-factor authentication": "mfa",
    "ec2 instances": "ec2",
}
#: Words with one meaning in a purpose ("datastore" and "database" are one purpose).
SYNONYMS = {
    "datastor": "databas",
    "db": "databas",
    "dbs": "databas",
    "infra": "infrastructur",
    "iac": "infrastructur",
    "repo": "repositori",
    "k8s": "kubernet",
    "authn": "authent",
    "auth": "authent",
    "2fa": "mfa",
    "cost": "price",
    "charg": "price",
}

#: Environments, each mapped to its canonical name.
ENVIRONMENTS = {
    "dev": "development",
    "development": "development",
    "local": "development",
    "local development": "development",
    "local dev": "development",
    "locally": "development",
    "staging": "staging",
    "preprod": "staging",
    "pre-production": "staging",
    "preproduction": "staging",
    "uat": "staging",
    "qa": "test",
    "test": "test",
    "tests": "test",
    "testing": "test",
    "ci": "ci",
    "prod": "production",
    "production": "production",
    "sandbox": "sandbox",
}
#: Regions by continent; cloud region codes are read by their prefix.
REGIONS = {
    "eu": "eu",
    "europe": "eu",
    "european": "eu",
    "emea": "eu",
    "uk": "uk",
    "britain": "uk",
    "us": "us",
    "usa": "us",
    "america": "us",
    "north america": "us",
    "canada": "ca",
    "apac": "apac",
    "asia": "apac",
    "asia pacific": "apac",
    "japan": "apac",
    "india": "apac",
    "singapore": "apac",
    "australia": "apac",
    "china": "cn",
    "latam": "latam",
    "south america": "latam",
    "brazil": "latam",
    "africa": "africa",
    "germany": "eu",
    "france": "eu",
    "ireland": "eu",
    "netherlands": "eu",
    "middle east": "me",
}
REGION_PREFIX = {
    "eu": "eu",
    "europe": "eu",
    "us": "us",
    "ap": "apac",
    "asia": "apac",
    "ca": "ca",
    "sa": "latam",
    "southamerica": "latam",
    "northamerica": "us",
    "me": "me",
    "af": "africa",
    "australia": "apac",
    "uk": "uk",
    "cn": "cn",
}
REGION_CODE = re.compile(
    r"^(eu|us|ap|ca|sa|me|af|cn|uk|europe|asia|australia|"
    r"northamerica|southamerica)-[a-z]+-?\d+[a-z]?$"
)
#: Nouns heading a named target ("for the billing service"): kept as a scope qualifier.
TARGET_HEADS = word_set(
    """
    service services team teams squad project projects app apps application applications repo
    repository repositories microservice microservices api apis backend frontend cluster
    clusters site website product products module component components pipeline pipelines
    domain tenant tenants customer customers account accounts org workspace
    """
)
#: Time words: they qualify an action ("on Fridays") and are never an option.
WEEKDAYS = word_set(
    "monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays "
    "thursdays fridays saturdays sundays weekend weekends weekday weekdays holiday holidays"
)
MONTHS = {
    m: i
    for i, names in enumerate(
        [
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        ],
        start=1,
    )
    for m in names.split()
}
NUMBER_WORDS = {
    w: i
    for i, w in enumerate(_words_in_order("zero one two three four five six seven eight nine ten"))
}
#: Units of measure and the base they convert to.
UNITS = {
    **dict.fromkeys(["ms", "msec", "msecs", "millisecond", "milliseconds"], ("duration", 0.001)),
    **dict.fromkeys(["s", "sec", "secs", "second", "seconds"], ("duration", 1.0)),
    **dict.fromkeys(["min", "mins", "minute", "minutes"], ("duration", 60.0)),
    **dict.fromkeys(["h", "hr", "hrs", "hour", "hours"], ("duration", 3600.0)),
    **dict.fromkeys(["d", "day", "days"], ("duration", 86400.0)),
    **dict.fromkeys(["w", "wk", "wks", "week", "weeks"], ("duration", 604800.0)),
    **dict.fromkeys(["month", "months", "mo"], ("duration", 2629800.0)),
    **dict.fromkeys(["y", "yr", "yrs", "year", "years"], ("duration", 31557600.0)),
    **dict.fromkeys(["%", "percent", "pct"], ("percent", 1.0)),
    **dict.fromkeys(["kb"], ("size", 1e3)),
    **dict.fromkeys(["mb"], ("size", 1e6)),
    **dict.fromkeys(["gb"], ("size", 1e9)),
    **dict.fromkeys(["tb"], ("size", 1e12)),
    **dict.fromkeys(["rps", "qps", "tps"], ("rate", 1.0)),
}
