"""Views of one run: what ``simulate`` (:mod:`~ppverify.views.run_report`) and ``show``
(:mod:`~ppverify.views.table_report`) print, as library calls that return text.

Example:
    >>> from ppverify.engines import run
    >>> from ppverify.schedules import build
    >>> from ppverify.views.run_report import timeline_report
    >>> timeline_report(run(build("1f1b", p=2, m=2)))["makespan"]
    6.0
"""
