module forewarn.bench/fleetgen

go 1.19
