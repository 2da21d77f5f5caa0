def test_health_answers_with_counts(anon, mind):
    response = anon.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "users": 1, "minds": 1, "memories": 0}
