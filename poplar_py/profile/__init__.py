"""The profile of a run: cycle and memory accounting and the JSON report (:mod:`.report`), the
printed summary, FLOPs against the device's peak (:mod:`.flops`) and the HTML viewer
(:mod:`.html`, its page in ``viewer/``)."""
