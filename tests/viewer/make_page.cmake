# ctest fixture for the browser test: a real viewer page, from `wse trace` of the GEMV example
# followed by `wse viz` (which takes the timelines from trace.pftrace beside the dump). Run with
# -DWSE=<wse binary> -DSRC=<source dir> -DOUT=<output dir>.
file(REMOVE_RECURSE ${OUT})
execute_process(COMMAND ${WSE} trace ${SRC}/examples/gemv.yaml --interval 500 --threads 1 --out ${OUT}/trace
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "wse trace failed (${rc})")
endif()
execute_process(COMMAND ${WSE} viz ${OUT}/trace/activity.wsad --out ${OUT}/viz RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT EXISTS ${OUT}/viz/index.html OR NOT EXISTS ${OUT}/viz/fmac_cycles.png)
  message(FATAL_ERROR "wse viz failed (${rc})")
endif()
# A corrupt dump: a clear error and exit code 2, no crash.
file(WRITE ${OUT}/corrupt.wsad "WSAD but not really a dump")
execute_process(COMMAND ${WSE} viz ${OUT}/corrupt.wsad --out ${OUT}/corrupt RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "corrupt.wsad")
  message(FATAL_ERROR "wse viz of a corrupt dump: exit ${rc}, stderr '${err}' (want 2 and the file name)")
endif()
# A corrupt trace given for the timelines: a clear error naming it, exit code 2.
file(WRITE ${OUT}/corrupt.pftrace "not a perfetto trace")
execute_process(COMMAND ${WSE} viz ${OUT}/trace/activity.wsad --trace ${OUT}/corrupt.pftrace --out ${OUT}/corrupt_trace
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "corrupt.pftrace")
  message(FATAL_ERROR "wse viz with a corrupt trace: exit ${rc}, stderr '${err}' (want 2 and the file name)")
endif()
