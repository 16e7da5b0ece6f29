-- Undoes 0042: no area report as of a time.
DROP FUNCTION geoingest_area_as_of(timestamptz, text, text, boolean);
DROP FUNCTION geoingest_report_cells_as_of(timestamptz, text);
