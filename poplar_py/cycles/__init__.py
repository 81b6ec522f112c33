"""The cycle model, read by the compiler passes, the runtime and the profile: what a step costs
and what a run records (:mod:`.costs`), the IPU-Link fabric (:mod:`.fabric`), the per-IPU clocks
of a run (:mod:`.timeline`) and the model's two calibrations (:mod:`.calibration`)."""
