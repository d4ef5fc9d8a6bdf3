"""A realistic, reproducible sample store for notebooks, demos and tests.

:func:`generate_sample` writes about three hundred decisions of a fictional shop's five teams
over seven months (March to September 2026) through the real write path: decisions with their
derived edges, dependencies on platform choices, replacements after incidents (``supersedes``
chains with ``caused_by`` links to the incident), freezes that ``block`` later work, opposing
decisions from different teams (``contradicts``), proposals accepted or rejected, updates, and
reviews whose outcomes follow a per-category over-confidence (so calibration has a story).

Everything is driven by one seed and a simulated clock: the same seed gives the same log, event
for event, and the same graph hash.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from graph.drafts import DecisionDraft, MemoryDraft
from graph.enums import EdgeType, Outcome
from graph.ids import IdSource
from retrieval.contradiction.judge import PairJudge, PairScorer
from retrieval.embedder import Embedder
from service import usecases
from service.composition import open_index, open_store
from service.settings import Settings
from service.usecases import Decigraph
from service.usecases.inputs import (
    DecisionChanges,
    LinkDecisions,
    Override,
    RecordDecision,
    ReviewDecision,
    SetLifecycle,
    UnlinkDecisions,
    UpdateDecision,
)

from . import vocab

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
HISTORY = Override(reason="the sample replays history as it happened")
END = datetime(2026, 9, 30, 18, 0, tzinfo=UTC)


@dataclass(frozen=True)
class SampleReport:
    """What :func:`generate_sample` wrote."""

    data_dir: Path
    seed: int
    decisions: int
    memories: int
    edges: int
    events: int
    graph_hash: str


@dataclass(order=True)
class _Action:
    at: datetime
    order: int
    run: Callable[[], None] = field(compare=False)


class _Story:
    """Plans the sample as timed actions, then plays them in time order on a simulated clock."""

    def __init__(self, app: Decigraph, seed: int, clock: list[datetime]) -> None:
        self.app = app
        self.store = app.store
        self.rng = random.Random(seed)
        self.clock = clock
        self.queue: list[_Action] = []
        self.counter = itertools.count()
        self.ids: dict[str, str] = {}  # story key -> node id
        self.category: dict[str, str] = {}
        self.confidence: dict[str, float] = {}

    # -- planning ----------------------------------------------------------------------------
    def at(self, when: datetime, run: Callable[[], None]) -> None:
        if when <= END:
            heapq.heappush(self.queue, _Action(when, next(self.counter), run))

    def play(self) -> None:
        while self.queue:
            action = heapq.heappop(self.queue)
            self.clock[0] = action.at
            action.run()

    def jitter(self, days_low: int, days_high: int) -> timedelta:
        minutes = self.rng.randint(0, 8 * 60)
        return timedelta(days=self.rng.randint(days_low, days_high), minutes=minutes)

    def confidence_draw(self) -> float:
        return round(self.rng.choice((0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)), 2)

    # -- actions -----------------------------------------------------------------------------
    def decide(
        self,
        when: datetime,
        key: str,
        project: str,
        text: str,
        category: str,
        *,
        stakes: str = "medium",
        context: str | None = None,
        reason: str | None = None,
        tags: tuple[str, ...] = (),
        entities: tuple[str, ...] = (),
        links: tuple[tuple[str, EdgeType], ...] = (),
        proposed: bool = False,
        supersedes: str | None = None,
        review: bool = True,
    ) -> None:
        confidence = self.confidence_draw()
        self.category[key] = category
        self.confidence[key] = confidence

        def run() -> None:
            reasons = []
            if reason:
                reasons = [{"type": vocab.REASON_TYPES[category], "text": reason}]
            draft = DecisionDraft.model_validate(
                {
                    "text": text,
                    "confidence": confidence,
                    "category": category,
                    "stakes": stakes,
                    "context": context,
                    "reasons": reasons,
                    "tags": [project, *tags],
                    "project": project,
                    "entities": list(entities),
                    "lifecycle": "proposed" if proposed else "accepted",
                    "review_in": "6w",
                }
            )
            wanted = [(self.ids[t], kind) for t, kind in links if t in self.ids]
            replaced = [self.ids[supersedes]] if supersedes in self.ids else []
            # Through the gate like any agent's record; the story records history as it
            # happened, so a decision the graph constraint blocks goes in with an override.
            cmd = RecordDecision(text=text, supersedes=replaced, override=HISTORY)
            made = usecases.record_decision(
                self.app, cmd, vocab.AGENTS[project], draft=draft, links=wanted
            )
            self.ids[key] = made.node.id

        self.at(when, run)
        if proposed:
            accept = self.rng.random() < 0.7
            self.at(when + self.jitter(3, 9), lambda: self.lifecycle(key, project, accept))
        if review:
            self.plan_review(when, key, project)

    def lifecycle(self, key: str, project: str, accept: bool) -> None:
        if key in self.ids:
            value = "accepted" if accept else "rejected"
            reason = "agreed in the weekly review" if accept else "the cost outweighed the gain"
            cmd = SetLifecycle.model_validate(
                {"id": self.ids[key], "lifecycle": value, "reason": reason}
            )
            usecases.set_lifecycle(self.app, cmd, vocab.AGENTS[project])

    def plan_review(self, when: datetime, key: str, project: str) -> None:
        if self.rng.random() >= 0.75:
            return
        expected = self.confidence[key] - vocab.OVERCONFIDENCE[self.category[key]]
        draw, spread = self.rng.random(), self.rng.random()
        if draw < min(max(expected, 0.05), 0.98):
            outcome = Outcome.SUCCESS
        else:
            outcome = (
                Outcome.PARTIAL
                if spread < 0.5
                else Outcome.FAILURE
                if spread < 0.85
                else Outcome.ABANDONED
            )
        lessons = {
            Outcome.SUCCESS: "Worked as planned; keep the approach.",
            Outcome.PARTIAL: "Helped, but the rollout took twice as long as planned.",
            Outcome.FAILURE: "Did not hold up under production load.",
            Outcome.ABANDONED: "Priorities moved before it was finished.",
        }[outcome]

        def run() -> None:
            if key in self.ids:
                review = ReviewDecision(id=self.ids[key], outcome=outcome, lessons=lessons)
                usecases.review_decision(self.app, review, "reviewer")

        self.at(when + self.jitter(30, 75), run)

    def incident(self, when: datetime, key: str, component: vocab.Component) -> None:
        text = self.rng.choice(vocab.INCIDENTS).format(
            c=component.name.capitalize(), n=self.rng.choice((3, 4, 6, 8, 12, 40))
        )

        def run() -> None:
            draft = MemoryDraft(
                text=f"Incident: {text}",
                kind="observation",
                source="incident-review",
                project=component.project,
                entities=[component.name],
                tags=["incident", component.project],
            )
            made = usecases.remember_item(self.app, draft, "incident-bot")
            self.ids[key] = made.node.id

        self.at(when, run)

    def update(self, when: datetime, key: str, project: str) -> None:
        bump = self.rng.choice((-0.1, -0.05, 0.05))

        def run() -> None:
            if key in self.ids:
                confidence = min(max(self.confidence[key] + bump, 0.05), 0.99)
                changes = DecisionChanges(confidence=round(confidence, 2))
                update = UpdateDecision(id=self.ids[key], changes=changes)
                usecases.update_decision(self.app, update, vocab.AGENTS[project])

        self.at(when, run)


def _slug(name: str) -> str:
    return name.replace(" ", "-").lower()


def _plan_component(story: _Story, component: vocab.Component, foundations: dict[str, str]) -> None:
    rng = story.rng
    project = component.project
    platform = project == "platform"
    t = START + story.jitter(0, 10) if platform else START + story.jitter(14, 45)
    slug = _slug(component.name)
    option = component.options[0]
    head = f"{slug}/choice-0"
    base_links: tuple[tuple[str, EdgeType], ...] = ()
    if not platform and component.stakes in ("high", "critical"):
        base_links = ((foundations["Kubernetes cluster"], EdgeType.DEPENDS_ON),)
        if rng.random() < 0.5:
            base_links += ((foundations["secrets store"], EdgeType.DEPENDS_ON),)
    story.decide(
        t,
        head,
        project,
        f"Use {option} for the {component.name}",
        "architecture",
        stakes=component.stakes,
        context=f"{project}: choosing the {component.name} for the first release",
        reason=f"{option}: {rng.choice(vocab.WHY_CHOOSE)}",
        tags=(slug,),
        entities=(option,),
        links=base_links,
    )
    replacements = 1 if rng.random() < 0.5 else 0
    replacements += 1 if replacements and rng.random() < 0.35 else 0
    steps = rng.randint(8, 14)
    replace_at = sorted(rng.sample(range(2, steps), replacements)) if replacements else []
    details: list[str] = []
    for step in range(steps):
        t += story.jitter(4, 14)
        if step in replace_at:
            choice = replace_at.index(step) + 1
            new = component.options[choice]
            incident = f"{slug}/incident-{choice}"
            story.incident(t - story.jitter(1, 3), incident, component)
            key = f"{slug}/choice-{choice}"
            story.decide(
                t,
                key,
                project,
                f"Replace {option} with {new} for the {component.name}",
                "architecture",
                stakes=component.stakes,
                context=f"{project}: {option} for the {component.name} because "
                f"{rng.choice(vocab.WHY_REPLACE)}",
                reason=f"{new} fixes what failed with {option}",
                tags=(slug, "migration"),
                entities=(option, new),
                links=((incident, EdgeType.CAUSED_BY), *base_links),
                supersedes=head,
            )
            head, option = key, new
            continue
        category, template = rng.choice(vocab.DETAILS)
        text = template.format(c=component.name, o=option, n=rng.choice(vocab.NUMBERS))
        key = f"{slug}/detail-{step}"
        links: tuple[tuple[str, EdgeType], ...] = ()
        if rng.random() < 0.8:
            links += ((head, EdgeType.DEPENDS_ON),)
        if details and rng.random() < 0.15:
            links += ((rng.choice(details), EdgeType.REFINES),)
        stakes = component.stakes if category in ("architecture", "security") else "medium"
        story.decide(
            t,
            key,
            project,
            text,
            category,
            stakes=stakes,
            context=f"{project}: {component.name} on {option}",
            reason=rng.choice(vocab.WHY_CHOOSE),
            tags=(slug,),
            entities=(option,),
            links=links,
            proposed=rng.random() < 0.1,
        )
        details.append(key)
        if rng.random() < 0.1:
            story.update(t + story.jitter(2, 6), key, project)


def _plan_freezes(story: _Story) -> None:
    """Freezes block the later work on their component; two are lifted (unlinked) later."""
    for number, (project, text, component) in enumerate(vocab.FREEZES):
        key = f"freeze-{number}"
        t = START + story.jitter(70, 120)
        story.decide(
            t,
            key,
            project,
            text,
            "process",
            stakes="high",
            context=f"{project}: protecting the {component} during a risky period",
            reason="changing it now would put the audit or migration at risk",
            tags=(_slug(component), "freeze"),
        )
        lifted = number < 2
        lift_at = t + story.jitter(40, 60)

        def block(freeze: str = key, component: str = component, project: str = project) -> None:
            slug = _slug(component)
            targets = sorted(
                (k for k in story.ids if k.startswith(f"{slug}/detail-")),
                key=lambda k: int(k.rsplit("-", 1)[1]),
            )[-3:]
            actor = vocab.AGENTS[project]
            for target in targets:
                link = LinkDecisions(
                    source=story.ids[freeze], target=story.ids[target], type=EdgeType.BLOCKS
                )
                usecases.link(story.app, link, actor)

        story.at(t + timedelta(hours=2), block)
        if lifted:

            def lift(freeze: str = key, project: str = project) -> None:
                node = story.ids[freeze]
                actor = vocab.AGENTS[project]
                for _, target, kind in list(story.store.graph.out_edges(node, keys=True)):
                    if kind == EdgeType.BLOCKS.value:
                        unlink = UnlinkDecisions(source=node, target=target, type=EdgeType.BLOCKS)
                        usecases.unlink(story.app, unlink, actor)

            story.at(lift_at, lift)


def _plan_conflicts(story: _Story) -> None:
    """Opposing decisions from two teams; the first two pairs are later reconciled."""
    for number, (first_project, first, second_project, second) in enumerate(vocab.CONFLICTS):
        t = START + story.jitter(30, 150)
        a, b = f"conflict-{number}/a", f"conflict-{number}/b"
        story.decide(t, a, first_project, first, "architecture", stakes="high")
        story.decide(
            t + story.jitter(3, 20),
            b,
            second_project,
            second,
            "architecture",
            stakes="high",
            links=((a, EdgeType.CONTRADICTS),),
        )
        if number < 2:
            settle = t + story.jitter(30, 45)
            story.decide(
                settle,
                f"conflict-{number}/settled",
                first_project,
                f"Settle it: {second[0].lower()}{second[1:]}, "
                f"with an exception for {first_project}",
                "architecture",
                stakes="high",
                context=f"{first_project} and {second_project} agreed in the architecture review",
                supersedes=a,
                links=((b, EdgeType.REFINES),),
            )


def generate_sample(
    data_dir: str | Path,
    *,
    seed: int = 7,
    embedder: Embedder | None = None,
    settings: Settings | None = None,
    pair_judge: PairScorer | None = None,
) -> SampleReport:
    """Write the sample store into an empty ``data_dir``.

    Parameters
    ----------
    data_dir : str or Path
        Where to create the store; must not hold an event log yet.
    seed : int
        Drives every choice; the same seed gives the same log and graph hash.
    embedder : Embedder, optional
        Defaults to the bundled all-MiniLM-L6-v2.
    settings : Settings, optional
        Chroma location and collection; ``data_dir`` always comes from the argument.
    pair_judge : PairScorer, optional
        The contradiction judge the gate uses; defaults to the shipped one (the sample's
        suspected contradictions are its verdicts, so they follow the judge's version).
    """
    path = Path(data_dir)
    if (path / "events.jsonl").exists():
        raise FileExistsError(f"{path} already holds a store; choose an empty directory")
    settings = (settings or Settings()).model_copy(update={"data_dir": path})
    clock = [START]
    store = open_store(
        settings.model_copy(update={"fsync": "never"}), clock=lambda: clock[0], ids=IdSource(seed)
    )
    try:
        index = open_index(store, settings, embedder)
        try:
            app = Decigraph(settings, store, index, pair_judge=pair_judge or PairJudge())
            story = _Story(app, seed, clock)
            foundations = {
                c.name: f"{_slug(c.name)}/choice-0"
                for c in vocab.COMPONENTS
                if c.project == "platform"
            }
            for component in vocab.COMPONENTS:
                _plan_component(story, component, foundations)
            _plan_freezes(story)
            _plan_conflicts(story)
            story.play()
        finally:
            index.close()
        G = store.graph
        kinds = [attrs.get("kind", "decision") for _, attrs in G.nodes(data=True)]
        return SampleReport(
            data_dir=path,
            seed=seed,
            decisions=sum(kind == "decision" for kind in kinds),
            memories=sum(kind != "decision" for kind in kinds),
            edges=G.number_of_edges(),
            events=store.seq,
            graph_hash=store.graph_hash(),
        )
    finally:
        store.close()


def ensure_sample(data_dir: str | Path, *, seed: int = 7) -> bool:
    """Generate the sample into ``data_dir`` unless a store is already there; True if made."""
    path = Path(data_dir)
    if (path / "events.jsonl").exists():
        return False
    generate_sample(path, seed=seed)
    return True
