"""The KLUE tasks, one package each (`klue/tasks/<name>/`): everything about a task lives in its package.

`base` declares what a task is, `kinds` holds the glue that tasks of one kind share; every other entry is
a task package that defines `TASK`, found by `klue.registry` (docs/architecture.md).
"""
