from svc_console.cli import main

raise SystemExit(main())
