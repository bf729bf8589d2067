module gpupack/e2e/scheduler

go 1.19
