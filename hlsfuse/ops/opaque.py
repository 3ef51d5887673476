"""(being written)"""

OPS = ()
