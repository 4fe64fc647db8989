# Loads an artifact of dtensor-compile and prints its manifest.
import ctypes
import sys

library = ctypes.CDLL(sys.argv[1])
manifest = library.dtensor_artifact_manifest
manifest.restype = ctypes.c_char_p
print(manifest().decode())
