import sys

from jitbench.cli.main import main

sys.exit(main())
