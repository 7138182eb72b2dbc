import sys

from motionkit.cli import main

sys.exit(main())
