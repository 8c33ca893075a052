from sparkcdc.cli import main

raise SystemExit(main())
