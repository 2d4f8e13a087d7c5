"""storyloom's engine: story packs, world state, turns, rules and the turn lifecycle.

The engine never imports Textual; every consumer reads the same events. Import each name from
the module that defines it: this package runs nothing, so importing a light module such as
`storyloom.engine.safety` builds no pydantic model and the game paints its first frame sooner.
"""
