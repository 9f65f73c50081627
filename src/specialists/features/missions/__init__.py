"""Missions: durable records of why delegated work exists, to recover it after compaction.

model.py (the mission as data, mission.json, pure changes), store.py (one
directory per mission, under a lock), index.py (the user-level index across projects),
state.py (the shared JSON `state`: state_get / state_set), ops.py (create, show, list,
prune), launch.py (what `run` does about missions), goal.py and driver.py (the goal
driver), news.py (the news seam that wakes it), actions.py (one entry for the tool).
See docs/missions.md.
"""
