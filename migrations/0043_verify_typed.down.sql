DROP FUNCTION geoingest_verify_typed();
