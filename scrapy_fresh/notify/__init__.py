"""Pushed change notifications: the notification record, the HTTP receiver and WebSub.

:mod:`~scrapy_fresh.notify.record` writes "this URL changed" into the store,
:mod:`~scrapy_fresh.notify.server` receives notifications over HTTP (``scrapy-fresh
notify-server``) and :mod:`~scrapy_fresh.notify.websub` subscribes to WebSub hubs.
"""
