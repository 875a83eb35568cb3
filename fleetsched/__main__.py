from fleetsched.cli import main

raise SystemExit(main())
