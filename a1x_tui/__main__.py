import sys

from a1x_tui.cli import main

sys.exit(main())
