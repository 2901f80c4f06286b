import sys

from bench.cli.main import main

sys.exit(main())
