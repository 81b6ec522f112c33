"""What runs a compiled program: the machine (:mod:`.machine`), one runner per kind of step
(:mod:`.step_runners`), compute sets' kernels (:mod:`.compute_sets`), copy plans (:mod:`.copies`,
:mod:`.native_copy`) over threads (:mod:`.threads`), the processes it runs on (:mod:`.mpi_world`),
the floating-point control state, Streaming Memory, host buffers and memory, PrintTensor's text
and whether runs reach the profile."""
