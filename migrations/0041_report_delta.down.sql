-- Undoes 0041: a version's report cells are computed whole again.
DROP FUNCTION geoingest_report_delta_cells(text, text, bigint[], bigint[]);
DROP FUNCTION geoingest_report_compute_rows(geometry[], double precision[], int[], bigint[], bigint[]);
