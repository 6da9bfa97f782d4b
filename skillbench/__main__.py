from skillbench.cli import main

raise SystemExit(main())
