DROP TABLE TaskRunLocks;
