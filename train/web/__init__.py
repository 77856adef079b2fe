"""The web table (``canasta serve``): play against agents and replay hands in the browser.

``serve`` (in ``train.cli``) is the command, light: its options import nothing heavy. Here:
``app`` the Starlette routes, ``store`` the games held by id (a lock each, agents on worker
threads), ``game`` one game, ``views`` the table as JSON, ``replays`` the record files, ``static/``
the page (HTML, CSS and JS that draws the cards as SVG; no build step). Against hostile input and
careless clients: ``schema`` and ``saved_game`` check untrusted JSON before use, ``files`` touches
the record dir without following links, ``quota`` caps its disk, ``limits`` holds every cap,
``bodies`` reads request bodies, ``middleware`` adds the security headers and answers every
failure as one-line JSON, ``server`` runs uvicorn with a deadline on request headers, and
``errors`` is the refusal every module raises.
"""
