import sys

from nemotron_operator.cli import main

sys.exit(main())
