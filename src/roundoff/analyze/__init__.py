"""roundoff.analyze"""
