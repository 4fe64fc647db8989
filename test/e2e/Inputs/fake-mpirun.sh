#!/bin/sh
# Stands in for mpirun in tests: never finishes.
sleep 600
