-- placeholder (h-pgs writes the baseline)
SELECT 1;
