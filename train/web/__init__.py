"""The web table (``canasta serve``): play against agents and replay hands in the browser.

``serve`` is the command (light: its options import nothing heavy), ``app`` the Starlette routes,
``game`` the games held by id, ``views`` the table as JSON, ``replays`` the record files, and
``static/`` the page (HTML, CSS and JS that draws the cards as SVG; no build step).
"""
